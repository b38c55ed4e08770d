//! "Did you mean": the one edit distance every stage's suggestions use —
//! the grammar's keywords, the checker's names, the PTX catalogue's
//! templates, the REPL's commands.
//!
//! The distance is optimal string alignment over characters: insertions,
//! deletions, substitutions and transpositions of neighbours each cost 1
//! (`Mvoe` is 1 from `Move`). It is only ever asked "within `limit`?", so
//! it is bounded: a candidate whose length differs by more than the limit
//! is skipped before any work, a common prefix and suffix are set aside
//! (they cost nothing), the table is computed in a band of width
//! `2·limit + 1` around its diagonal, a row whose every cell is past the
//! limit ends the search, and no limit exceeds [`MAX_DISTANCE`]. A search
//! therefore costs time linear in the text compared — a megabyte-long
//! identifier against thousands of names stays fast.

/// The most edits a suggestion may be away: a name further from every
/// candidate than this is not a typo of any of them.
pub const MAX_DISTANCE: usize = 16;

/// Whether letters of different case count as different.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Case {
    /// `Move` and `move` differ by one edit.
    Sensitive,
    /// ASCII letters compare without case (keywords typed in any case).
    Insensitive,
}

/// The edit distance of `a` and `b` if it is at most `limit` (and at most
/// [`MAX_DISTANCE`]), else `None`.
pub fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    bounded(
        &chars(a, Case::Sensitive),
        &chars(b, Case::Sensitive),
        limit,
    )
}

/// The candidate closest to `word`, if one is within `limit(candidate)`
/// edits; of equally close candidates, the first given wins.
pub fn closest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
    case: Case,
    limit: impl Fn(&str) -> usize,
) -> Option<&'c str> {
    let word = chars(word, case);
    let mut best: Option<(usize, &'c str)> = None;
    for candidate in candidates {
        let allowed = match best {
            // Only a strictly closer candidate replaces the first found.
            Some((0, _)) => break,
            Some((found, _)) => limit(candidate).min(found - 1),
            None => limit(candidate),
        };
        if let Some(found) = bounded(&word, &chars(candidate, case), allowed) {
            best = Some((found, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Up to `count` candidates within `limit` edits of `word`, closest first,
/// ties by name.
pub fn nearest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
    limit: usize,
    count: usize,
) -> Vec<&'c str> {
    let word = chars(word, Case::Sensitive);
    let mut scored: Vec<(usize, &'c str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            bounded(&word, &chars(candidate, Case::Sensitive), limit)
                .map(|found| (found, candidate))
        })
        .collect();
    scored.sort_unstable();
    scored
        .into_iter()
        .take(count)
        .map(|(_, candidate)| candidate)
        .collect()
}

fn chars(text: &str, case: Case) -> Vec<char> {
    match case {
        Case::Sensitive => text.chars().collect(),
        Case::Insensitive => text.chars().map(|c| c.to_ascii_lowercase()).collect(),
    }
}

/// Optimal string alignment distance of `a` and `b` if at most `limit`.
///
/// Rows run over the longer text, columns over the shorter; row `i` is
/// computed for columns `i - limit ..= i + limit` only, with a cell past
/// the limit on each side of that band so that the next row reads
/// "too far" there rather than a value left from an older row.
fn bounded(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    let limit = limit.min(MAX_DISTANCE);
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    if a.len() - b.len() > limit {
        return None;
    }
    // Equal first (or last) characters are aligned with each other in some
    // optimal alignment, transpositions included: a swap that moved one of
    // them would have to swap it with an equal neighbour.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let far = limit + 1;
    let width = b.len() + 1;
    let mut before = vec![far; width];
    let mut previous: Vec<usize> = (0..width).map(|j| j.min(far)).collect();
    let mut current = vec![far; width];
    for i in 1..=a.len() {
        let low = i.saturating_sub(limit);
        let high = (i + limit).min(b.len());
        if low > 0 {
            current[low - 1] = far;
        } else {
            current[0] = i.min(far);
        }
        let mut row_best = if low == 0 { current[0] } else { far };
        for j in low.max(1)..=high {
            let mut best = (previous[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(previous[j] + 1)
                .min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best.min(far);
            row_best = row_best.min(current[j]);
        }
        if high < b.len() {
            current[high + 1] = far;
        }
        if row_best > limit {
            return None;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b.len()]).filter(|&found| found <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole table, for comparison with the banded one.
    fn full(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let width = b.len() + 1;
        let mut table = vec![0usize; (a.len() + 1) * width];
        for i in 0..=a.len() {
            for j in 0..=b.len() {
                table[i * width + j] = if i == 0 || j == 0 {
                    i + j
                } else {
                    let mut best = (table[(i - 1) * width + j - 1]
                        + usize::from(a[i - 1] != b[j - 1]))
                    .min(table[(i - 1) * width + j] + 1)
                    .min(table[i * width + j - 1] + 1);
                    if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                        best = best.min(table[(i - 2) * width + j - 2] + 1);
                    }
                    best
                };
            }
        }
        table[a.len() * width + b.len()]
    }

    #[test]
    fn single_edits_and_transpositions_cost_one() {
        assert_eq!(distance("acc", "acc", 3), Some(0));
        assert_eq!(distance("acc", "ac", 3), Some(1));
        assert_eq!(distance("tid_m", "tid_n", 3), Some(1));
        assert_eq!(distance("Mvoe", "Move", 3), Some(1));
        assert_eq!(distance("", "abc", 3), Some(3));
        assert_eq!(distance("kitten", "sitting", 3), Some(3));
        assert_eq!(distance("kitten", "sitting", 2), None);
        assert_eq!(distance("add.u32", "add.u3", 1), Some(1));
    }

    #[test]
    fn the_band_agrees_with_the_whole_table() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "acb",
            "move",
            "Mvoe",
            "matmul",
            "MatMul",
            "tile",
            "tiel",
            "reshape",
            "rehsape",
            "ldmatrix.x4",
            "ldmatrix.x4.trans",
            "ca",
            "abcdefgh",
            "hgfedcba",
            "tid_m",
            "tid",
        ];
        for a in words {
            for b in words {
                let exact = full(a, b);
                for limit in 0..8 {
                    let expected = (exact <= limit).then_some(exact);
                    assert_eq!(
                        distance(a, b, limit),
                        expected,
                        "{a:?} {b:?} within {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_band_agrees_with_the_whole_table_on_every_short_word() {
        let mut words = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = words
                .iter()
                .filter(|word| word.len() == words.last().map_or(0, String::len))
                .flat_map(|word| ["a", "b", "c"].map(|letter| format!("{word}{letter}")))
                .collect();
            words.extend(longer);
        }
        for a in &words {
            for b in &words {
                let exact = full(a, b);
                for limit in [0, 1, 2, 3] {
                    let expected = (exact <= limit).then_some(exact);
                    assert_eq!(
                        distance(a, b, limit),
                        expected,
                        "{a:?} {b:?} within {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_first_of_equally_close_candidates_wins() {
        let kinds = ["Move", "MatMul", "Shfl"];
        let third = |candidate: &str| (4usize.max(candidate.len()) / 3).max(1);
        assert_eq!(closest("Mvoe", kinds, Case::Sensitive, third), Some("Move"));
        assert_eq!(
            closest("move", kinds, Case::Insensitive, third),
            Some("Move")
        );
        assert_eq!(closest("Transpose", kinds, Case::Sensitive, third), None);
        assert_eq!(
            closest("ab", ["ax", "ay", "ab"], Case::Sensitive, |_| 1),
            Some("ab")
        );
        assert_eq!(
            closest("ab", ["ay", "ax"], Case::Sensitive, |_| 1),
            Some("ay")
        );
        assert_eq!(
            nearest("add.u3", ["sub.u32", "add.s32", "add.u32"], 3, 2),
            ["add.u32", "add.s32"]
        );
    }

    /// The bounded search finds the near candidate of a 10 MB name among
    /// 20k others (its time is measured by a benchmark over generated
    /// inputs, not asserted here: a timed test fails on a loaded machine).
    #[test]
    fn a_huge_name_against_many_candidates_finds_the_near_one() {
        let huge = "x".repeat(10 * 1024 * 1024);
        let names: Vec<String> = (0..20_000).map(|i| format!("name_{i}")).collect();
        let mut candidates: Vec<&str> = names.iter().map(String::as_str).collect();
        // Two candidates as long as the name itself: the common prefix and
        // the early exit keep each to one pass.
        let near = format!("{}y", &huge[1..]);
        let far = "y".repeat(huge.len());
        candidates.push(&far);
        candidates.push(&near);
        let found = closest(&huge, candidates.iter().copied(), Case::Sensitive, |_| {
            huge.len() / 3
        });
        assert_eq!(found, Some(near.as_str()));
    }
}
