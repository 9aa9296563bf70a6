//! Row kernels of the `.str` functions, on `&str` values (the evaluator resolves interned
//! ids, runs these once per distinct string of a chunk and interns the results).
//!
//! Characters are Unicode code points throughout (`len_chars`, `slice`, LIKE's `_`);
//! whitespace is Unicode `White_Space` (`char::is_whitespace`); case mapping is Rust's
//! full Unicode mapping (`str::to_lowercase`, final sigma included). Regexes use the Rust
//! `regex` crate's syntax; an invalid pattern is an [`Error::Plan`].

use crate::error::{Error, Result};
use regex::Regex;
use std::borrow::Cow;

/// A `contains` / `replace` pattern: plain text or a compiled regex.
#[derive(Clone, Debug)]
pub(crate) enum Matcher {
    /// A substring.
    Literal(String),
    /// A regex.
    Regex(Regex),
}

impl Matcher {
    /// The matcher of `pattern`, literal or a regex.
    pub(crate) fn new(pattern: &str, literal: bool) -> Result<Matcher> {
        Ok(if literal {
            Matcher::Literal(pattern.to_string())
        } else {
            Matcher::Regex(compile_regex(pattern)?)
        })
    }

    /// Whether `s` contains a match.
    pub(crate) fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Literal(p) => s.contains(p.as_str()),
            Matcher::Regex(r) => r.is_match(s),
        }
    }

    /// `s` with its first (leftmost) match replaced by `value`, taken literally.
    pub(crate) fn replace_first<'s>(&self, s: &'s str, value: &str) -> Cow<'s, str> {
        match self {
            Matcher::Literal(p) => match s.find(p.as_str()) {
                None => Cow::Borrowed(s),
                Some(at) => Cow::Owned(format!("{}{value}{}", &s[..at], &s[at + p.len()..])),
            },
            Matcher::Regex(r) => r.replacen(s, 1, regex::NoExpand(value)),
        }
    }
}

/// Compiles a regex, or an [`Error::Plan`] naming the pattern and the parser's message.
pub(crate) fn compile_regex(pattern: &str) -> Result<Regex> {
    Regex::new(pattern)
        .map_err(|e| Error::Plan(format!("invalid regex {}: {e}", super::ast::quote(pattern))))
}

/// The anchored regex of a SQL LIKE pattern: `%` is any run of characters, `_` any one
/// character (newlines included), `\` makes the next `%`, `_` or `\` literal. A `\` before
/// anything else or at the end is an [`Error::Plan`] (as in Spark).
pub(crate) fn like_regex(pattern: &str) -> Result<Regex> {
    let mut re = String::from(r"(?s)\A");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => re.push_str(".*"),
            '_' => re.push('.'),
            '\\' => match chars.next() {
                Some(e @ ('%' | '_' | '\\')) => re.push_str(&regex::escape(&e.to_string())),
                _ => {
                    return Err(Error::Plan(format!(
                        "invalid LIKE pattern {}: the escape character \\ must precede %, _ or \\",
                        super::ast::quote(pattern)
                    )))
                }
            },
            c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    re.push_str(r"\z");
    compile_regex(&re)
}

/// The number of code points.
#[inline]
pub(crate) fn len_chars(s: &str) -> i64 {
    s.chars().count() as i64
}

/// `s` without leading and trailing Unicode whitespace.
#[inline]
pub(crate) fn strip(s: &str) -> &str {
    s.trim()
}

/// The code points `[start, end)` of `s`, where `start` is `offset` (negative: counted from
/// the end), `end` is `start + length` (`None`: the end), both clamped to `0..=len`.
pub(crate) fn slice(s: &str, offset: i64, length: Option<i64>) -> &str {
    let n = len_chars(s);
    let start = if offset >= 0 {
        offset
    } else {
        n.saturating_add(offset)
    };
    let end = match length {
        None => n,
        Some(l) => start.saturating_add(l),
    };
    let (start, end) = (start.clamp(0, n), end.clamp(0, n));
    if end <= start {
        return "";
    }
    let mut bounds = s
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(s.len()));
    let b0 = bounds.nth(start as usize).unwrap_or(s.len());
    let b1 = bounds.nth((end - start - 1) as usize).unwrap_or(s.len());
    &s[b0..b1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Naive LIKE: dynamic programming over code points.
    fn like_reference(s: &str, pattern: &str) -> bool {
        #[derive(Clone, Copy, PartialEq)]
        enum Tok {
            Any,
            One,
            Lit(char),
        }
        let mut toks = Vec::new();
        let mut it = pattern.chars();
        while let Some(c) = it.next() {
            toks.push(match c {
                '%' => Tok::Any,
                '_' => Tok::One,
                '\\' => Tok::Lit(it.next().unwrap()),
                c => Tok::Lit(c),
            });
        }
        let s: Vec<char> = s.chars().collect();
        // m[i][j]: the first i tokens match the first j characters.
        let mut m = vec![vec![false; s.len() + 1]; toks.len() + 1];
        m[0][0] = true;
        for i in 1..=toks.len() {
            for j in 0..=s.len() {
                m[i][j] = match toks[i - 1] {
                    Tok::Any => m[i - 1][j] || (j > 0 && m[i][j - 1]),
                    Tok::One => j > 0 && m[i - 1][j - 1],
                    Tok::Lit(c) => j > 0 && s[j - 1] == c && m[i - 1][j - 1],
                };
            }
        }
        m[toks.len()][s.len()]
    }

    fn slice_reference(s: &str, offset: i64, length: Option<i64>) -> String {
        let cs: Vec<char> = s.chars().collect();
        let n = cs.len() as i128;
        let start = if offset >= 0 {
            offset as i128
        } else {
            n + offset as i128
        };
        let end = length.map_or(n, |l| start + l as i128);
        let (start, end) = (start.clamp(0, n), end.clamp(0, n));
        if end <= start {
            return String::new();
        }
        cs[start as usize..end as usize].iter().collect()
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just('a'),
                Just('b'),
                Just('%'),
                Just('_'),
                Just(' '),
                Just('\n'),
                Just('\u{2003}'),
                Just('é'),
                Just('Σ'),
                Just('😀'),
                any::<char>(),
            ],
            0..10,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    fn arb_like() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("a"),
                Just("b"),
                Just("%"),
                Just("_"),
                Just("\\%"),
                Just("\\_"),
                Just("\\\\"),
                Just("é"),
                Just("."),
                Just("*"),
            ],
            0..6,
        )
        .prop_map(|v| v.concat())
    }

    #[test]
    fn cases() {
        assert_eq!(len_chars("héllo😀"), 6);
        assert_eq!(strip("\u{2003} a b\t\n"), "a b");
        assert_eq!(slice("hello", 1, Some(3)), "ell");
        assert_eq!(slice("hello", -3, None), "llo");
        assert_eq!(slice("abc", -5, Some(3)), "a");
        assert_eq!(slice("abc", 5, Some(3)), "");
        assert_eq!(slice("h😀llo", 1, Some(2)), "😀l");
        let re = like_regex("a%\\_b_").unwrap();
        assert!(re.is_match("axx_bc") && !re.is_match("axxybc"));
        assert!(like_regex("a\\").is_err() && like_regex("\\a").is_err());
        assert!(matches!(compile_regex("(a"), Err(Error::Plan(_))));
        let m = Matcher::new("o", true).unwrap();
        assert_eq!(m.replace_first("foo", "0"), "f0o");
        let m = Matcher::new("o+", false).unwrap();
        assert_eq!(m.replace_first("foo boo", "$1"), "f$1 boo");
        assert_eq!(
            Matcher::new("", true).unwrap().replace_first("ab", "x"),
            "xab"
        );
        assert_eq!(
            Matcher::new("", false).unwrap().replace_first("ab", "x"),
            "xab"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn prop_like_matches_reference(s in arb_text(), p in arb_like()) {
            prop_assert_eq!(like_regex(&p).unwrap().is_match(&s), like_reference(&s, &p), "{:?} LIKE {:?}", s, p);
        }

        #[test]
        fn prop_slice_matches_reference(s in arb_text(), offset in -12i64..12, length in prop::option::of(0i64..12)) {
            prop_assert_eq!(slice(&s, offset, length), slice_reference(&s, offset, length));
        }

        #[test]
        fn prop_slice_extremes(s in arb_text(), offset in any::<i64>(), length in prop::option::of(0..=i64::MAX)) {
            prop_assert_eq!(slice(&s, offset, length), slice_reference(&s, offset, length));
        }

        #[test]
        fn prop_len_strip_match_reference(s in arb_text()) {
            let cs: Vec<char> = s.chars().collect();
            prop_assert_eq!(len_chars(&s), cs.len() as i64);
            let a = cs.iter().position(|c| !c.is_whitespace()).unwrap_or(cs.len());
            let b = cs.iter().rposition(|c| !c.is_whitespace()).map_or(a, |i| i + 1);
            let want: String = cs[a..b.max(a)].iter().collect();
            prop_assert_eq!(strip(&s), want);
        }

        #[test]
        fn prop_literal_and_escaped_regex_agree(s in arb_text(), p in arb_text(), v in arb_text()) {
            let lit = Matcher::new(&p, true).unwrap();
            let re = Matcher::new(&regex::escape(&p), false).unwrap();
            prop_assert_eq!(lit.is_match(&s), re.is_match(&s));
            prop_assert_eq!(lit.replace_first(&s, &v), re.replace_first(&s, &v));
            // Naive substring search over char boundaries.
            let naive = (0..=s.len()).filter(|&i| s.is_char_boundary(i)).find(|&i| s[i..].starts_with(p.as_str()));
            prop_assert_eq!(lit.is_match(&s), naive.is_some());
            if let Some(i) = naive {
                prop_assert_eq!(lit.replace_first(&s, &v), format!("{}{}{}", &s[..i], v, &s[i + p.len()..]));
            }
        }
    }
}
