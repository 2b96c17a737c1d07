//! The host part of what `--ssh` was given, for messages and for picking a test address.

/// `[USER@]HOST` as given to `--ssh`: the host part alone (`node2` of `root@node2`).
pub fn host_part(ssh_host: &str) -> &str {
    let (uri, h) = match ssh_host.strip_prefix("ssh://") {
        Some(rest) => (true, rest),
        None => (false, ssh_host),
    };
    let h = h.rsplit_once('@').map_or(h, |(_, h)| h);
    if !uri {
        return h;
    }
    // `ssh://[USER@]HOST[:PORT]`, an IPv6 address in brackets.
    let h = match h.rsplit_once(':') {
        Some((a, p)) if !a.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => a,
        _ => h,
    };
    h.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::host_part;

    #[test]
    fn the_host_part_of_user_at_host_and_ssh_uris() {
        assert_eq!(host_part("root@node2"), "node2");
        assert_eq!(host_part("node2"), "node2");
        assert_eq!(host_part("ssh://u@h:22"), "h");
        assert_eq!(host_part("ssh://[::1]:2222"), "::1");
    }
}
