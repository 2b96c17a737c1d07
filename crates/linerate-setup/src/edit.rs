//! Editors for the configuration formats: each changes the keys it is asked to and leaves every
//! other byte of the file as it was (comments, order, addresses, other interfaces). Pure.
//!
//! Why line editors and not parse-and-re-emit: no maintained Rust serializer for YAML or for
//! INI keeps comments, key order and quoting byte for byte, and regenerating a file from its
//! parsed form would lose what the operator wrote. So each editor changes lines, and the YAML
//! one then re-parses its result with `yaml-rust2` and checks that the document equals the
//! original plus exactly the requested keys: an edit it cannot prove is refused, not written.

/// INI-style files: NetworkManager keyfiles, systemd `.network` files, `/etc/nfs.conf`.
pub mod ini {
    fn section_of(line: &str) -> Option<&str> {
        let t = line.trim();
        t.strip_prefix('[')?.strip_suffix(']').map(str::trim)
    }

    fn key_of(line: &str) -> Option<(&str, &str)> {
        let t = line.trim_start();
        if t.starts_with('#') || t.starts_with(';') || t.starts_with('[') {
            return None;
        }
        let (k, v) = t.split_once('=')?;
        Some((k.trim(), v.trim()))
    }

    /// The value of `key` in the last `[section]` that sets it.
    pub fn get(text: &str, section: &str, key: &str) -> Option<String> {
        let mut cur = None;
        let mut found = None;
        for line in text.lines() {
            if let Some(s) = section_of(line) {
                cur = Some(s.to_string());
            } else if cur.as_deref() == Some(section) {
                if let Some((k, v)) = key_of(line) {
                    if k == key {
                        found = Some(v.to_string());
                    }
                }
            }
        }
        found
    }

    /// Set `key=value` in `[section]`: replace the key's line (keeping its spacing around `=`),
    /// or add it at the end of the section's keys, or add the section at the end of the file.
    pub fn set(text: &str, section: &str, key: &str, value: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let mut cur: Option<&str> = None;
        let mut last_key_in_section: Option<usize> = None;
        let mut section_header: Option<usize> = None;
        let mut hit: Option<usize> = None;
        for (i, line) in lines.iter().enumerate() {
            if let Some(s) = section_of(line) {
                cur = Some(s);
                if s == section {
                    section_header = Some(i);
                    last_key_in_section = Some(i);
                }
            } else if cur == Some(section) {
                if let Some((k, _)) = key_of(line) {
                    last_key_in_section = Some(i);
                    if k == key {
                        hit = Some(i);
                    }
                }
            }
        }
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
        if let Some(i) = hit {
            let old = lines[i];
            let eq = old.find('=').unwrap_or(old.len());
            let spaced = old[..eq].ends_with(' ');
            let indent: String = old.chars().take_while(|c| c.is_whitespace()).collect();
            out[i] = if spaced {
                format!("{indent}{key} = {value}")
            } else {
                format!("{indent}{key}={value}")
            };
        } else if let (Some(_), Some(at)) = (section_header, last_key_in_section) {
            let spaced = key_of(lines[at]).is_some() && lines[at].contains(" = ");
            let new = if spaced {
                format!("{key} = {value}")
            } else {
                format!("{key}={value}")
            };
            out.insert(at + 1, new);
        } else {
            if out.last().is_some_and(|l| !l.trim().is_empty()) {
                out.push(String::new());
            }
            out.push(format!("[{section}]"));
            out.push(format!("{key}={value}"));
        }
        let mut s = out.join("\n");
        s.push('\n');
        s
    }
}

/// Shell-variable files: RHEL `ifcfg-*`, `os-release`, `/etc/sysconfig/*`.
pub mod ifcfg {
    fn unquote(v: &str) -> String {
        let v = v.trim();
        for q in ['"', '\''] {
            if let Some(inner) = v.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
                return inner.to_string();
            }
        }
        v.to_string()
    }

    /// The value of `KEY`, quotes removed.
    pub fn get(text: &str, key: &str) -> Option<String> {
        text.lines()
            .filter_map(|l| l.trim().split_once('='))
            .filter(|(k, _)| k.trim() == key)
            .map(|(_, v)| unquote(v))
            .next_back()
    }

    /// Set `KEY=value`: replace every line that sets it (the last one wins in a shell, so all
    /// are replaced), or append it.
    pub fn set(text: &str, key: &str, value: &str) -> String {
        let mut hit = false;
        let mut out: Vec<String> = text
            .lines()
            .map(|l| match l.trim().split_once('=') {
                Some((k, _)) if k.trim() == key && !l.trim_start().starts_with('#') => {
                    hit = true;
                    format!("{key}={value}")
                }
                _ => l.to_string(),
            })
            .collect();
        if !hit {
            out.push(format!("{key}={value}"));
        }
        let mut s = out.join("\n");
        s.push('\n');
        s
    }
}

/// Debian's `/etc/network/interfaces`.
pub mod ifupdown {
    const STANZAS: [&str; 7] = [
        "iface",
        "auto",
        "mapping",
        "source",
        "source-directory",
        "rename",
        "allow-",
    ];

    fn starts_stanza(line: &str) -> bool {
        let t = line.trim_start();
        STANZAS.iter().any(|s| {
            t.starts_with(s) && (s.ends_with('-') || t[s.len()..].starts_with(char::is_whitespace))
        })
    }

    fn is_iface_line(line: &str, iface: &str) -> bool {
        let mut w = line.split_whitespace();
        w.next() == Some("iface") && w.next() == Some(iface) && w.next() == Some("inet")
    }

    pub fn has_stanza(text: &str, iface: &str) -> bool {
        text.lines().any(|l| is_iface_line(l, iface))
    }

    /// Every option line of the `iface IFACE inet` stanza, as (line index, content).
    fn stanza(lines: &[&str], iface: &str) -> Option<(usize, usize)> {
        let start = lines.iter().position(|l| is_iface_line(l, iface))?;
        let mut end = start + 1;
        let mut last = start;
        while end < lines.len() && !starts_stanza(lines[end]) {
            let t = lines[end].trim();
            if !t.is_empty() && !t.starts_with('#') {
                last = end;
            }
            end += 1;
        }
        Some((start, last))
    }

    /// The value of an option (`mtu`) in the stanza of `iface`.
    pub fn option(text: &str, iface: &str, name: &str) -> Option<String> {
        let lines: Vec<&str> = text.lines().collect();
        let (start, last) = stanza(&lines, iface)?;
        lines[start + 1..=last].iter().find_map(|l| {
            let t = l.trim();
            let (k, v) = t.split_once(char::is_whitespace)?;
            (k == name).then(|| v.trim().to_string())
        })
    }

    /// Make the stanza of `iface` hold `line`: replace the first option line for which
    /// `matches` is true, or add it after the stanza's last option, indented like the others.
    /// `None` when there is no `iface IFACE inet` stanza.
    pub fn ensure(
        text: &str,
        iface: &str,
        line: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let lines: Vec<&str> = text.lines().collect();
        let (start, last) = stanza(&lines, iface)?;
        let indent: String = lines[start + 1..=last]
            .iter()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map_or_else(
                || "    ".to_string(),
                |l| l.chars().take_while(|c| c.is_whitespace()).collect(),
            );
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
        let hit = (start + 1..=last).find(|&i| {
            let t = lines[i].trim();
            !t.starts_with('#') && matches(t)
        });
        match hit {
            Some(i) => out[i] = format!("{indent}{line}"),
            None => out.insert(last + 1, format!("{indent}{line}")),
        }
        let mut s = out.join("\n");
        s.push('\n');
        Some(s)
    }
}

/// Netplan YAML.
pub mod netplan {
    use yaml_rust2::{Yaml, YamlLoader};

    /// A parsed netplan file.
    #[derive(Debug)]
    pub struct Doc {
        root: Yaml,
    }

    /// Why an edit was not made.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct EditError(pub String);

    impl std::fmt::Display for EditError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl Doc {
        pub fn parse(text: &str) -> Result<Self, EditError> {
            let docs = YamlLoader::load_from_str(text)
                .map_err(|e| EditError(format!("not valid YAML: {e}")))?;
            match docs.len() {
                1 => Ok(Self {
                    root: docs.into_iter().next().unwrap_or(Yaml::Null),
                }),
                0 => Ok(Self { root: Yaml::Null }),
                n => Err(EditError(format!(
                    "{n} YAML documents in one file (netplan reads one)"
                ))),
            }
        }

        /// The id under `network.ethernets` that configures `iface`: the key itself, or an id
        /// whose `match: name:` is `iface` (without wildcards).
        pub fn find_interface(&self, iface: &str) -> Option<String> {
            let eth = self.root["network"]["ethernets"].as_hash()?;
            for (k, v) in eth {
                let Some(id) = k.as_str() else { continue };
                if id == iface && v["match"].is_badvalue() {
                    return Some(id.to_string());
                }
                if v["match"]["name"].as_str() == Some(iface) {
                    return Some(id.to_string());
                }
            }
            None
        }

        /// `renderer:` for an interface: its own, its section's, or the file's.
        pub fn renderer(&self, iface: &str) -> Option<String> {
            let id = self.find_interface(iface)?;
            let eth = &self.root["network"]["ethernets"];
            [
                &eth[id.as_str()]["renderer"],
                &eth["renderer"],
                &self.root["network"]["renderer"],
            ]
            .iter()
            .find_map(|y| y.as_str().map(str::to_string))
        }

        /// A value under the interface's mapping, as text (`mtu` → `65520`).
        pub fn value(&self, id: &str, key: &str) -> Option<String> {
            match &self.root["network"]["ethernets"][id][key] {
                Yaml::String(s) => Some(s.clone()),
                Yaml::Integer(i) => Some(i.to_string()),
                Yaml::Real(r) => Some(r.clone()),
                Yaml::Boolean(b) => Some(b.to_string()),
                _ => None,
            }
        }
    }

    fn indent_of(line: &str) -> usize {
        line.len() - line.trim_start_matches(' ').len()
    }

    fn is_content(line: &str) -> bool {
        let t = line.trim();
        !t.is_empty() && !t.starts_with('#')
    }

    /// The key of a block-mapping line (`  ib0:` → `ib0`), quotes removed, with whether a
    /// value follows on the same line.
    fn key_line(line: &str) -> Option<(String, bool)> {
        let t = line.trim();
        let (k, rest) = t.split_once(':')?;
        let k = k.trim().trim_matches('"').trim_matches('\'');
        let rest = rest.trim();
        Some((k.to_string(), !(rest.is_empty() || rest.starts_with('#'))))
    }

    /// Find the child `key:` of the block that starts after line `parent` (or the top level).
    fn child(lines: &[&str], parent: Option<usize>, key: &str) -> Option<(usize, bool)> {
        let (from, min_indent) = match parent {
            Some(p) => (p + 1, indent_of(lines[p]) + 1),
            None => (0, 0),
        };
        let mut child_indent = None;
        for (i, l) in lines.iter().enumerate().skip(from) {
            if !is_content(l) || l.trim() == "---" {
                continue;
            }
            let ind = indent_of(l);
            if ind < min_indent {
                break;
            }
            let ci = *child_indent.get_or_insert(ind);
            if ind == ci {
                if let Some((k, inline)) = key_line(l) {
                    if k == key {
                        return Some((i, inline));
                    }
                }
            }
        }
        None
    }

    fn yaml_scalar(v: &str) -> Yaml {
        v.parse::<i64>()
            .map_or_else(|_| Yaml::String(v.to_string()), Yaml::Integer)
    }

    /// Set `keys` in the mapping of `network.ethernets.<id>`, keeping every other line, then
    /// prove the edit by re-parsing.
    pub fn set_keys(text: &str, id: &str, keys: &[(&str, &str)]) -> Result<String, EditError> {
        let before = Doc::parse(text)?;
        let lines: Vec<&str> = text.lines().collect();
        let flow = || {
            EditError(format!(
                "the mapping of {id} is written in flow style ({{...}}) or on one line: edit it by hand, or write it as a block"
            ))
        };
        let (net, net_inline) = child(&lines, None, "network")
            .ok_or_else(|| EditError("no `network:` block".into()))?;
        let (eth, eth_inline) = child(&lines, Some(net), "ethernets")
            .ok_or_else(|| EditError("no `ethernets:` block under network".into()))?;
        let (at, id_inline) = child(&lines, Some(eth), id)
            .ok_or_else(|| EditError(format!("no `{id}:` under network.ethernets")))?;
        if net_inline || eth_inline || id_inline {
            return Err(flow());
        }
        let id_indent = indent_of(lines[at]);
        let step = indent_of(lines[eth])
            .saturating_sub(indent_of(lines[net]))
            .max(2);
        let mut end = at;
        let mut kid_indent = None;
        for (i, l) in lines.iter().enumerate().skip(at + 1) {
            if !is_content(l) {
                continue;
            }
            if indent_of(l) <= id_indent {
                break;
            }
            kid_indent.get_or_insert(indent_of(l));
            end = i;
        }
        let kid_indent = kid_indent.unwrap_or(id_indent + step);
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
        let pad = " ".repeat(kid_indent);
        for (k, v) in keys {
            let existing = (at + 1..=end).find(|&i| {
                let l = out[i].as_str();
                indent_of(l) == kid_indent
                    && is_content(l)
                    && key_line(l).is_some_and(|(kk, _)| kk == *k)
            });
            match existing {
                Some(i) => out[i] = format!("{pad}{k}: {v}"),
                None => {
                    end += 1;
                    out.insert(end, format!("{pad}{k}: {v}"));
                }
            }
        }
        let mut new = out.join("\n");
        new.push('\n');
        verify(&before, &new, id, keys)?;
        Ok(new)
    }

    fn verify(before: &Doc, new: &str, id: &str, keys: &[(&str, &str)]) -> Result<(), EditError> {
        let after = Doc::parse(new).map_err(|e| {
            EditError(format!(
                "the edited file would not parse ({e}); not written"
            ))
        })?;
        let mut want = before.root.clone();
        let slot = hash_at(&mut want, &["network", "ethernets", id]).ok_or_else(|| {
            EditError(format!(
                "network.ethernets.{id} is not a mapping; not edited"
            ))
        })?;
        for (k, v) in keys {
            let key = Yaml::String((*k).to_string());
            // Replace in place (the line stays where it was); a new key goes last.
            match slot.get_mut(&key) {
                Some(old) => *old = yaml_scalar(v),
                None => {
                    slot.insert(key, yaml_scalar(v));
                }
            }
        }
        if after.root == want {
            Ok(())
        } else {
            Err(EditError(format!(
                "editing network.ethernets.{id} line by line would change more than {} (unusual layout: anchors, multi-line values or comments between keys); edit it by hand",
                keys.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(" and ")
            )))
        }
    }

    fn hash_at<'a>(y: &'a mut Yaml, path: &[&str]) -> Option<&'a mut yaml_rust2::yaml::Hash> {
        let mut cur = y;
        for p in path {
            let Yaml::Hash(h) = cur else { return None };
            let k = Yaml::String((*p).to_string());
            if matches!(h.get(&k), Some(Yaml::Null)) {
                h.insert(k.clone(), Yaml::Hash(yaml_rust2::yaml::Hash::new()));
            }
            cur = h.get_mut(&k)?;
        }
        match cur {
            Yaml::Hash(h) => Some(h),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_set_replaces_adds_and_appends() {
        let t = "[connection]\nid=ib0\ninterface-name=ib0\n\n[infiniband]\nmtu=2044\n\n[ipv4]\naddress1=10.0.0.1/24\n";
        let t2 = ini::set(t, "infiniband", "mtu", "65520");
        let t3 = ini::set(&t2, "infiniband", "transport-mode", "connected");
        assert_eq!(
            t3,
            "[connection]\nid=ib0\ninterface-name=ib0\n\n[infiniband]\nmtu=65520\ntransport-mode=connected\n\n[ipv4]\naddress1=10.0.0.1/24\n"
        );
        let t4 = ini::set("[Match]\nName=ib0\n", "IPoIB", "Mode", "connected");
        assert_eq!(t4, "[Match]\nName=ib0\n\n[IPoIB]\nMode=connected\n");
        assert_eq!(ini::get(&t3, "infiniband", "mtu").as_deref(), Some("65520"));
        let nfs = "[nfsd]\n# rdma=n\nthreads = 8\n";
        assert_eq!(
            ini::set(nfs, "nfsd", "rdma", "y"),
            "[nfsd]\n# rdma=n\nthreads = 8\nrdma = y\n"
        );
    }

    #[test]
    fn ifcfg_and_ifupdown() {
        let t = "DEVICE=ib0\nTYPE=InfiniBand\nMTU=\"2044\"\n";
        let t2 = ifcfg::set(&ifcfg::set(t, "MTU", "65520"), "CONNECTED_MODE", "yes");
        assert_eq!(
            t2,
            "DEVICE=ib0\nTYPE=InfiniBand\nMTU=65520\nCONNECTED_MODE=yes\n"
        );
        assert_eq!(ifcfg::get(t, "MTU").as_deref(), Some("2044"));
        let i = "auto lo\niface lo inet loopback\n\nauto ib0\niface ib0 inet static\n\taddress 10.0.0.1/24\n\tmtu 2044\n\nauto eth0\niface eth0 inet dhcp\n";
        let i2 = ifupdown::ensure(i, "ib0", "mtu 65520", |l| l.starts_with("mtu ")).unwrap();
        let i3 = ifupdown::ensure(&i2, "ib0", "pre-up echo x", |l| {
            l.starts_with("pre-up") && l.contains("/mode")
        })
        .unwrap();
        assert_eq!(
            i3,
            "auto lo\niface lo inet loopback\n\nauto ib0\niface ib0 inet static\n\taddress 10.0.0.1/24\n\tmtu 65520\n\tpre-up echo x\n\nauto eth0\niface eth0 inet dhcp\n"
        );
        assert!(ifupdown::ensure(i, "ib9", "mtu 1", |_| false).is_none());
        assert_eq!(
            ifupdown::option(&i3, "ib0", "mtu").as_deref(),
            Some("65520")
        );
    }

    #[test]
    fn netplan_edit_keeps_the_rest() {
        let y = "# written by the installer\nnetwork:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eno1:\n      dhcp4: true\n    ib0:\n      addresses: [10.0.0.1/24]   # storage net\n      mtu: 2044\n    ib1:\n      dhcp4: false\n";
        let out = netplan::set_keys(
            y,
            "ib0",
            &[("infiniband-mode", "connected"), ("mtu", "65520")],
        )
        .unwrap();
        assert_eq!(
            out,
            "# written by the installer\nnetwork:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eno1:\n      dhcp4: true\n    ib0:\n      addresses: [10.0.0.1/24]   # storage net\n      mtu: 65520\n      infiniband-mode: connected\n    ib1:\n      dhcp4: false\n"
        );
        // Idempotent.
        let again = netplan::set_keys(
            &out,
            "ib0",
            &[("infiniband-mode", "connected"), ("mtu", "65520")],
        )
        .unwrap();
        assert_eq!(again, out);
        let flow = "network:\n  ethernets:\n    ib0: {mtu: 2044}\n";
        assert!(netplan::set_keys(flow, "ib0", &[("mtu", "65520")]).is_err());
        let d = netplan::Doc::parse(y).unwrap();
        assert_eq!(d.renderer("ib0").as_deref(), Some("networkd"));
        assert_eq!(d.find_interface("ib0").as_deref(), Some("ib0"));
        assert_eq!(d.value("ib0", "mtu").as_deref(), Some("2044"));
    }
}
