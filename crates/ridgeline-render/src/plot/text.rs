//! Text metrics and fitting: estimated widths from DejaVu Sans metrics, shrinking and
//! ellipsizing to a width, and word wrapping.

/// Estimated advance width of `text` in pixels at font size `px` (the SVG `font-size`),
/// from DejaVu Sans metrics rounded up. Used to lay out labels and by the tests that
/// check every label stays on the canvas.
pub fn text_width(text: &str, px: f64) -> f64 {
    text.chars().map(char_em).sum::<f64>() * px
}

fn char_em(c: char) -> f64 {
    match c {
        'i' | 'l' | 'j' | '\'' | '|' | 'I' => 0.30,
        ' ' | '.' | ',' | ':' | ';' | '!' | '·' => 0.33,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' | '\\' | '-' | '{' | '}' => 0.42,
        'm' | 'M' | 'W' | '%' | '…' | '—' => 1.0,
        'w' => 0.83,
        'A'..='Z' => 0.79,
        '0'..='9' | 'a'..='z' | 'µ' | '_' | '#' | '$' | '?' => 0.64,
        '×' | '≥' | '≤' | '∝' | '→' | '+' | '=' | '<' | '>' | '~' | '≈' => 0.84,
        _ => 0.9,
    }
}

/// Shrinks `text` to fit `max_w` pixels: first the font down to `min_size`, then the
/// text with an ellipsis. Returns the text and size to draw.
pub(crate) fn fit_text(
    text: &str,
    max_w: f64,
    size: f64,
    min_size: f64,
    bold: bool,
) -> (String, f64) {
    let k = if bold { 1.1 } else { 1.0 };
    let mut s = size;
    while s > min_size && text_width(text, s) * k > max_w {
        s -= 1.0;
    }
    if text_width(text, s) * k <= max_w {
        return (text.to_string(), s);
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let t: String = chars.iter().collect::<String>().trim_end().to_string() + "…";
        if text_width(&t, s) * k <= max_w {
            return (t, s);
        }
    }
    (String::new(), s)
}

/// Wraps `text` into lines of at most `max_w` px at `size`.
pub(crate) fn wrap(text: &str, max_w: f64, size: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&cand, size) <= max_w || cur.is_empty() {
            cur = cand;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
        .into_iter()
        .map(|l| fit_text(&l, max_w, size, size, false).0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_text_shrinks_then_truncates() {
        let (t, s) = fit_text("short", 200.0, 12.0, 10.0, false);
        assert_eq!((t.as_str(), s), ("short", 12.0));
        let long = "a very long title that cannot possibly fit in forty pixels";
        let (t, s) = fit_text(long, 40.0, 12.0, 10.0, false);
        assert_eq!(s, 10.0);
        assert!(t.ends_with('…') && text_width(&t, s) <= 40.0);
    }
}
