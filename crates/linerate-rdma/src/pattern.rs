//! The verification pattern: every byte depends on the message's sequence number and its offset,
//! so a byte from another message, another offset or a stale buffer is caught.
//!
//! The pattern is generated 8 bytes at a time (a multiply-xorshift mix of sequence and word
//! index, little endian); a message's tail shorter than 8 bytes takes the low bytes of its word.

/// The 64-bit pattern word at word index `word` of message `seq`.
#[inline]
fn word(seq: u32, word: u64) -> u64 {
    let mut x = (u64::from(seq) << 32 | 0x5eed) ^ word.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 32)
}

/// Fills `buf` with the pattern of message `seq`.
pub fn fill(buf: &mut [u8], seq: u32) {
    let mut chunks = buf.chunks_exact_mut(8);
    let mut i = 0u64;
    for c in &mut chunks {
        c.copy_from_slice(&word(seq, i).to_le_bytes());
        i += 1;
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&word(seq, i).to_le_bytes()[..n]);
}

/// Counts the bytes of `buf` that differ from the pattern of message `seq` (0: intact).
pub fn mismatches(buf: &[u8], seq: u32) -> u64 {
    let mut bad = 0u64;
    let mut chunks = buf.chunks_exact(8);
    let mut i = 0u64;
    for c in &mut chunks {
        let got = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let diff = got ^ word(seq, i);
        if diff != 0 {
            bad += diff.to_le_bytes().iter().filter(|&&b| b != 0).count() as u64;
        }
        i += 1;
    }
    let rest = chunks.remainder();
    let want = word(seq, i).to_le_bytes();
    bad += rest.iter().zip(want).filter(|(a, b)| *a != b).count() as u64;
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_check_is_clean_for_odd_lengths() {
        for len in [0, 1, 2, 7, 8, 9, 63, 4096, 4099] {
            let mut b = vec![0u8; len];
            fill(&mut b, 42);
            assert_eq!(mismatches(&b, 42), 0, "len {len}");
        }
    }

    #[test]
    fn depends_on_sequence_and_offset() {
        let mut a = vec![0u8; 64];
        let mut b = vec![0u8; 64];
        fill(&mut a, 1);
        fill(&mut b, 2);
        assert_ne!(a, b);
        assert!(mismatches(&a, 2) > 32, "another sequence must not verify");
        // Same sequence shifted by one word (as if written at the wrong offset).
        assert!(mismatches(&a[8..], 1) > 0);
        assert_ne!(a[..8], a[8..16]);
    }

    #[test]
    fn counts_each_corrupted_byte() {
        let mut b = vec![0u8; 100];
        fill(&mut b, 7);
        b[3] ^= 1;
        b[50] ^= 0xff;
        b[99] = b[99].wrapping_add(1);
        assert_eq!(mismatches(&b, 7), 3);
    }

    #[test]
    fn zeroes_do_not_verify() {
        assert!(mismatches(&[0u8; 32], 0) > 0);
    }
}
