//! Finding where a piece of text the model expected is "almost" in a file:
//! whitespace-insensitive matches and the most similar runs of lines.

/// Collapses runs of whitespace to one space and trims.
pub fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The char bigrams of a squashed line, sorted (a multiset).
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams
}

/// Dice similarity of two bigram multisets, in 0..=1.
fn dice(a: &[(char, char)], b: &[(char, char)], a_text: &str, b_text: &str) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if a_text == b_text { 1.0 } else { 0.0 };
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Where `needle` (lines) occurs in `hay` (lines) when whitespace is ignored:
/// the 0-based start indices, at most `max`.
pub fn whitespace_insensitive(hay: &[&str], needle: &[&str], max: usize) -> Vec<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    let needle: Vec<String> = needle.iter().map(|l| squash(l)).collect();
    let hay_sq: Vec<String> = hay.iter().map(|l| squash(l)).collect();
    let mut found = Vec::new();
    for start in 0..=hay.len() - needle.len() {
        if hay_sq[start..start + needle.len()] == needle[..] {
            found.push(start);
            if found.len() >= max {
                break;
            }
        }
    }
    found
}

/// A run of lines similar to what was looked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Near {
    /// 0-based index of the first line.
    pub start: usize,
    /// Number of lines.
    pub len: usize,
    /// Similarity in 0..=1.
    pub score: f64,
}

/// Lines in a file considered for similarity at most (beyond, only the first
/// ones are looked at).
const MAX_HAY_LINES: usize = 50_000;
/// Line comparisons at most for one search.
const MAX_WORK: usize = 4_000_000;

/// The `max` non-overlapping runs of `hay` most similar to `needle`, best
/// first, each at least `min_score` similar. Similarity is the mean Dice
/// coefficient of character bigrams of whitespace-squashed lines.
pub fn most_similar(hay: &[&str], needle: &[&str], max: usize, min_score: f64) -> Vec<Near> {
    let needle: Vec<&str> = needle.to_vec();
    if needle.is_empty() || hay.is_empty() {
        return Vec::new();
    }
    let hay = &hay[..hay.len().min(MAX_HAY_LINES)];
    let k = needle.len().min(hay.len());
    let hay_sq: Vec<String> = hay.iter().map(|l| squash(l)).collect();
    let hay_bg: Vec<Vec<(char, char)>> = hay_sq.iter().map(|l| bigrams(l)).collect();
    let needle_sq: Vec<String> = needle.iter().map(|l| squash(l)).collect();
    let needle_bg: Vec<Vec<(char, char)>> = needle_sq.iter().map(|l| bigrams(l)).collect();
    // Which needle lines to compare: all of them, or (for big searches) the
    // first, middle and last.
    let windows = hay.len() - k + 1;
    let probe: Vec<usize> = if windows.saturating_mul(k) <= MAX_WORK {
        (0..k).collect()
    } else {
        let mut p = vec![0, k / 2, k - 1];
        p.dedup();
        p
    };
    let mut scored: Vec<Near> = (0..windows)
        .map(|start| {
            let total: f64 = probe
                .iter()
                .map(|&j| {
                    dice(
                        &needle_bg[j],
                        &hay_bg[start + j],
                        &needle_sq[j],
                        &hay_sq[start + j],
                    )
                })
                .sum();
            Near {
                start,
                len: k,
                score: total / probe.len() as f64,
            }
        })
        .filter(|n| n.score >= min_score)
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.start.cmp(&b.start)));
    let mut picked: Vec<Near> = Vec::new();
    for near in scored {
        if picked.len() >= max {
            break;
        }
        let overlaps = picked
            .iter()
            .any(|p| near.start < p.start + p.len && p.start < near.start + near.len);
        if !overlaps {
            picked.push(near);
        }
    }
    picked
}

/// "line 4" or "lines 4-6" (1-based) for `len` lines from 0-based `start`.
pub fn line_range(start: usize, len: usize) -> String {
    if len <= 1 {
        format!("line {}", start + 1)
    } else {
        format!("lines {}-{}", start + 1, start + len)
    }
}

/// Numbered lines `start..start + len` of `lines` (0-based start), at most
/// `max_lines` of them.
pub fn excerpt(lines: &[&str], start: usize, len: usize, max_lines: usize) -> String {
    let end = (start + len).min(lines.len());
    let mut out: Vec<String> = lines[start..end]
        .iter()
        .take(max_lines)
        .enumerate()
        .map(|(i, l)| crate::text::number_line(start + i + 1, l))
        .collect();
    if end - start > max_lines {
        out.push(format!(
            "        … ({} more lines)",
            end - start - max_lines
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squash_collapses_whitespace() {
        assert_eq!(squash("  let  x =\t1; "), "let x = 1;");
    }

    #[test]
    fn whitespace_insensitive_finds_reindented_blocks() {
        let hay = ["fn a() {", "    if x {", "        y();", "    }", "}"];
        assert_eq!(whitespace_insensitive(&hay, &["if x {", "  y();"], 5), [1]);
        assert!(whitespace_insensitive(&hay, &["if z {"], 5).is_empty());
    }

    #[test]
    fn most_similar_ranks_close_lines_first() {
        let hay = [
            "fn alpha() -> u32 {",
            "    let total = compute(1, 2);",
            "    total + 1",
            "}",
            "fn beta() {}",
        ];
        let near = most_similar(&hay, &["let totl = compute(1, 2);", "total + 2"], 3, 0.5);
        assert_eq!(near[0].start, 1);
        assert_eq!(near[0].len, 2);
        assert!(near[0].score > 0.8, "{near:?}");
        assert!(most_similar(&hay, &["completely unrelated words"], 3, 0.6).is_empty());
    }

    #[test]
    fn excerpt_numbers_and_caps() {
        let lines = ["a", "b", "c", "d"];
        assert_eq!(excerpt(&lines, 1, 2, 10), "     2\tb\n     3\tc");
        assert_eq!(
            excerpt(&lines, 0, 4, 2),
            "     1\ta\n     2\tb\n        … (2 more lines)"
        );
    }
}
