//! Slurm host lists: `n[0-3,7]`, `rack[1-2]-n[01-16]`, `a,b[1-2]`. Top-level commas separate
//! names; a bracket holds comma-separated numbers and `lo-hi` ranges; several brackets in one
//! name expand as a cartesian product (leftmost bracket outermost, as Slurm orders them). A
//! zero-padded bound keeps its width (`[01-16]` → `01` … `16`): every number of a range is
//! printed at the width of its lower bound, which is what Slurm does.

use thiserror::Error;

/// The most names one host list may expand to: far above any cluster linerate is run on, low
/// enough that a typo (`n[0-999999999]`) is an error instead of gigabytes of strings.
pub const MAX_HOSTS: usize = 100_000;

/// The longest number a bracket may hold (digits): more is a typo, and it keeps `u64` exact.
const MAX_DIGITS: usize = 18;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostlistError {
    #[error("host list {list:?}: {what} at position {pos} (counting from 1)")]
    Syntax {
        list: String,
        /// 1-based character position of the offending character (or one past the end).
        pos: usize,
        what: String,
    },
    #[error("host list {list:?} expands to more than {max} names ({count}); split it or check the ranges")]
    TooLarge {
        list: String,
        count: String,
        max: usize,
    },
    #[error("host list is empty: expected names such as `node[01-16]`")]
    Empty,
}

/// One piece of a name: literal text, or the numbers of one bracket (already formatted).
#[derive(Debug)]
enum Part {
    Text(String),
    Numbers(Vec<NumRange>),
}

/// `lo..=hi` printed at `width` digits.
#[derive(Debug, Clone, Copy)]
struct NumRange {
    lo: u64,
    hi: u64,
    width: usize,
}

impl NumRange {
    fn len(self) -> u64 {
        self.hi - self.lo + 1
    }
}

/// Expands a Slurm host list into its names, in order. Errors name the list, the position of
/// the first bad character and what was expected; an expansion over [`MAX_HOSTS`] is refused
/// before anything is allocated.
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let chars: Vec<char> = list.chars().collect();
    if chars.iter().all(|c| c.is_whitespace()) {
        return Err(HostlistError::Empty);
    }
    let names = split_top_level(list, &chars)?;
    let mut parsed = Vec::with_capacity(names.len());
    let mut total: u64 = 0;
    for (start, end) in names {
        let parts = parse_name(list, &chars, start, end)?;
        let count = parts.iter().try_fold(1u64, |acc, p| match p {
            Part::Text(_) => Some(acc),
            Part::Numbers(r) => acc.checked_mul(r.iter().map(|x| x.len()).sum()),
        });
        let sum = count.and_then(|c| total.checked_add(c));
        total = sum
            .filter(|&t| t <= MAX_HOSTS as u64)
            .ok_or_else(|| HostlistError::TooLarge {
                list: list.to_string(),
                count: sum.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string()),
                max: MAX_HOSTS,
            })?;
        parsed.push(parts);
    }
    let mut out = Vec::with_capacity(total as usize);
    for parts in &parsed {
        let mut names = vec![String::new()];
        for part in parts {
            names = match part {
                Part::Text(t) => names.into_iter().map(|n| n + t).collect(),
                Part::Numbers(ranges) => names
                    .iter()
                    .flat_map(|n| {
                        ranges.iter().flat_map(move |r| {
                            (r.lo..=r.hi).map(move |v| format!("{n}{v:0w$}", w = r.width))
                        })
                    })
                    .collect(),
            };
        }
        out.extend(names);
    }
    Ok(out)
}

fn syntax(list: &str, pos: usize, what: impl Into<String>) -> HostlistError {
    HostlistError::Syntax {
        list: list.to_string(),
        pos: pos + 1,
        what: what.into(),
    }
}

/// The (start, end) character spans of the comma-separated names outside brackets.
fn split_top_level(list: &str, chars: &[char]) -> Result<Vec<(usize, usize)>, HostlistError> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '[' if depth > 0 => {
                return Err(syntax(
                    list,
                    i,
                    "`[` inside a bracket (nesting is not allowed)",
                ))
            }
            '[' => depth = 1,
            ']' if depth == 0 => return Err(syntax(list, i, "`]` without an opening `[`")),
            ']' => depth = 0,
            ',' if depth == 0 => {
                spans.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(syntax(list, chars.len(), "`]` expected before the end"));
    }
    spans.push((start, chars.len()));
    Ok(spans)
}

fn parse_name(
    list: &str,
    chars: &[char],
    start: usize,
    end: usize,
) -> Result<Vec<Part>, HostlistError> {
    if start == end {
        return Err(syntax(list, start, "a host name expected (empty name)"));
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut i = start;
    while i < end {
        let c = chars[i];
        if c == '[' {
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            let close = (i..end)
                .find(|&j| chars[j] == ']')
                .expect("balanced by split_top_level");
            parts.push(Part::Numbers(parse_bracket(list, chars, i + 1, close)?));
            i = close + 1;
        } else if c.is_whitespace() || c.is_control() {
            return Err(syntax(
                list,
                i,
                "whitespace or a control character in a host name",
            ));
        } else {
            text.push(c);
            i += 1;
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

/// The inside of one bracket, `start..end` (exclusive of the brackets).
fn parse_bracket(
    list: &str,
    chars: &[char],
    start: usize,
    end: usize,
) -> Result<Vec<NumRange>, HostlistError> {
    if start == end {
        return Err(syntax(list, start, "a number or a range expected in `[]`"));
    }
    let mut ranges = Vec::new();
    let mut i = start;
    loop {
        let (lo, lo_width, next) = parse_number(list, chars, i, end)?;
        let (hi, next) = if next < end && chars[next] == '-' {
            let (hi, _, after) = parse_number(list, chars, next + 1, end)?;
            if hi < lo {
                return Err(syntax(
                    list,
                    next + 1,
                    format!(
                        "range {lo}-{hi} goes down: the upper bound must not be below the lower"
                    ),
                ));
            }
            (hi, after)
        } else {
            (lo, next)
        };
        ranges.push(NumRange {
            lo,
            hi,
            width: lo_width,
        });
        if next == end {
            return Ok(ranges);
        }
        if chars[next] != ',' {
            return Err(syntax(
                list,
                next,
                format!("`,`, `-` or `]` expected, found {:?}", chars[next]),
            ));
        }
        i = next + 1;
    }
}

/// A run of digits at `i`: its value, its width, and the index after it.
fn parse_number(
    list: &str,
    chars: &[char],
    i: usize,
    end: usize,
) -> Result<(u64, usize, usize), HostlistError> {
    let digits_end = (i..end)
        .find(|&j| !chars[j].is_ascii_digit())
        .unwrap_or(end);
    if digits_end == i {
        let found = if i < end {
            format!("found {:?}", chars[i])
        } else {
            "found the end of the bracket".to_string()
        };
        return Err(syntax(list, i, format!("a number expected, {found}")));
    }
    let width = digits_end - i;
    if width > MAX_DIGITS {
        return Err(syntax(
            list,
            i,
            format!("a number of at most {MAX_DIGITS} digits expected"),
        ));
    }
    let text: String = chars[i..digits_end].iter().collect();
    let value = text.parse().expect("at most 18 ASCII digits fit in u64");
    Ok((value, width, digits_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    fn err(list: &str) -> HostlistError {
        expand(list).expect_err(list)
    }

    fn pos(list: &str) -> usize {
        match err(list) {
            HostlistError::Syntax { pos, .. } => pos,
            other => panic!("{list}: {other:?}"),
        }
    }

    #[test]
    fn plain_names_and_top_level_commas() {
        assert_eq!(ok("node1"), ["node1"]);
        assert_eq!(ok("a,b,c"), ["a", "b", "c"]);
        assert_eq!(ok("a,b[1-2]"), ["a", "b1", "b2"]);
        assert_eq!(ok("h.example.org,h2"), ["h.example.org", "h2"]);
    }

    #[test]
    fn ranges_and_single_numbers() {
        assert_eq!(ok("n[0-3,7]"), ["n0", "n1", "n2", "n3", "n7"]);
        assert_eq!(ok("n[5]"), ["n5"]);
        assert_eq!(ok("n[3-3]"), ["n3"]);
        assert_eq!(ok("n[0-1]"), ["n0", "n1"]);
        assert_eq!(ok("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(ok("[1-2]n"), ["1n", "2n"]);
        assert_eq!(ok("n[1-2]x"), ["n1x", "n2x"]);
    }

    #[test]
    fn zero_padding_keeps_the_lower_bound_width() {
        assert_eq!(ok("n[01-03]"), ["n01", "n02", "n03"]);
        assert_eq!(ok("n[08-10]"), ["n08", "n09", "n10"]);
        assert_eq!(ok("n[001-002,010]"), ["n001", "n002", "n010"]);
        assert_eq!(ok("n[9-10]"), ["n9", "n10"]);
    }

    #[test]
    fn several_brackets_are_a_cartesian_product_leftmost_outermost() {
        let v = ok("rack[1-2]-n[01-16]");
        assert_eq!(v.len(), 32);
        assert_eq!(v[0], "rack1-n01");
        assert_eq!(v[15], "rack1-n16");
        assert_eq!(v[16], "rack2-n01");
        assert_eq!(v[31], "rack2-n16");
        assert_eq!(ok("r[1,3]s[0-1]"), ["r1s0", "r1s1", "r3s0", "r3s1"]);
        assert_eq!(ok("a[1-2],b[1-2]c[5]"), ["a1", "a2", "b1c5", "b2c5"]);
    }

    #[test]
    fn syntax_errors_name_the_position() {
        assert_eq!(pos("n[1-2"), 6); // one past the end
        assert_eq!(pos("n1-2]"), 5);
        assert_eq!(pos("n[1[2]]"), 4);
        assert_eq!(pos("n[]"), 3);
        assert_eq!(pos("n[a]"), 3);
        assert_eq!(pos("n[1-]"), 5);
        assert_eq!(pos("n[-1]"), 3);
        assert_eq!(pos("n[3-1]"), 5);
        assert_eq!(pos("n[1;2]"), 4);
        assert_eq!(pos("n[1,]"), 5);
        assert_eq!(pos("a,,b"), 3);
        assert_eq!(pos("a,"), 3);
        assert_eq!(pos(",a"), 1);
        assert_eq!(pos("a b"), 2);
        assert_eq!(pos("n[1234567890123456789]"), 3);
        let msg = err("n[1[2]]").to_string();
        assert!(
            msg.contains("n[1[2]]") && msg.contains("position 4") && msg.contains("nesting"),
            "{msg}"
        );
        let msg = err("n[3-1]").to_string();
        assert!(msg.contains("3-1"), "{msg}");
    }

    #[test]
    fn empty_lists_are_refused() {
        assert_eq!(err(""), HostlistError::Empty);
        assert_eq!(err("  "), HostlistError::Empty);
    }

    #[test]
    fn expansion_is_bounded() {
        assert_eq!(ok("n[1-100000]").len(), MAX_HOSTS);
        assert!(matches!(err("n[0-100000]"), HostlistError::TooLarge { .. }));
        assert!(matches!(
            err("n[1-100000],x"),
            HostlistError::TooLarge { .. }
        ));
        assert!(matches!(
            err("a[0-999]b[0-999]"),
            HostlistError::TooLarge { .. }
        ));
        // The product overflows u64 without being computed in full.
        let huge = "a[0-999999999999999999]b[0-999999999999999999]c[0-99999]";
        let msg = err(huge).to_string();
        assert!(msg.contains("more than"), "{msg}");
    }
}
