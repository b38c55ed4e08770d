//! Drawing: any picture as SVG — the text a drawing prints with colour on,
//! laid out on a monospace grid, each coloured run of characters (a cell
//! of a thread, a tile, a bank mark) on a tinted box of its colour. One
//! drawing, two outputs: the SVG holds exactly the characters the terminal
//! shows, so a slide and the REPL never disagree.

use std::fmt::Write;

/// Width of one character cell, in SVG units (monospace at font size 14).
const CHAR_WIDTH: f64 = 8.4;
/// Height of one line.
const LINE_HEIGHT: f64 = 17.0;
/// The font size the grid is measured for.
const FONT_SIZE: f64 = 14.0;
/// The margin around the text.
const MARGIN: f64 = 8.0;

/// The colour of an ANSI foreground code of the drawing palette
/// (`table::PALETTE`), as `#rrggbb`; other codes draw black.
fn color_of(code: u8) -> &'static str {
    match code {
        31 => "#c62828",
        32 => "#2e7d32",
        33 => "#9e7c00",
        34 => "#1565c0",
        35 => "#ad1457",
        36 => "#00838f",
        91 => "#e53935",
        92 => "#43a047",
        93 => "#ef6c00",
        94 => "#1e88e5",
        95 => "#8e24aa",
        96 => "#00acc1",
        _ => "#000000",
    }
}

/// A run of characters of one colour on one line.
struct Run {
    text: String,
    /// The character column it starts at.
    column: usize,
    color: Option<u8>,
}

/// The runs of one line of text with ANSI colour codes (`ESC[Nm`, reset
/// `ESC[0m`); other escape sequences are dropped.
fn runs(line: &str) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut color: Option<u8> = None;
    let mut column = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            let mut code = String::new();
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                    code.push(d);
                }
            }
            color = match code.parse::<u8>() {
                Ok(0) | Err(_) => None,
                Ok(n) => Some(n),
            };
            continue;
        }
        match out.last_mut() {
            Some(run) if run.color == color => run.text.push(c),
            Some(_) | None => out.push(Run {
                text: c.to_string(),
                column,
                color,
            }),
        }
        column += 1;
    }
    out
}

/// `text` escaped for an XML text node.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The SVG of a drawing's text (as printed with colour on): one `<text>`
/// per line, each coloured run a `<tspan>` over a tinted `<rect>` of its
/// colour. Deterministic: the same text gives the same bytes.
///
/// ```
/// use graphene::viz::svg;
/// let picture = svg("T0 \x1b[31mT1:v2\x1b[0m\n");
/// assert!(picture.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
/// assert!(picture.contains("<tspan fill=\"#c62828\">T1:v2</tspan>"));
/// ```
pub fn svg(text: &str) -> String {
    let lines: Vec<Vec<Run>> = text.lines().map(runs).collect();
    let columns = lines
        .iter()
        .filter_map(|line| line.last().map(|run| run.column + run.text.chars().count()))
        .max()
        .unwrap_or(0);
    let width = 2.0 * MARGIN + columns as f64 * CHAR_WIDTH;
    let height = 2.0 * MARGIN + lines.len() as f64 * LINE_HEIGHT;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.1}\" height=\"{height:.1}\" \
         viewBox=\"0 0 {width:.1} {height:.1}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" \
         font-size=\"{FONT_SIZE}\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"
    );
    for (row, line) in lines.iter().enumerate() {
        let top = MARGIN + row as f64 * LINE_HEIGHT;
        for run in line {
            let Some(code) = run.color else { continue };
            let cells = run.text.chars().count();
            let _ = writeln!(
                out,
                "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{LINE_HEIGHT:.1}\" fill=\"{}\" fill-opacity=\"0.15\"/>",
                MARGIN + run.column as f64 * CHAR_WIDTH,
                cells as f64 * CHAR_WIDTH,
                color_of(code)
            );
        }
    }
    for (row, line) in lines.iter().enumerate() {
        let baseline = MARGIN + (row as f64 + 0.8) * LINE_HEIGHT;
        let _ = write!(
            out,
            "<text x=\"{MARGIN:.1}\" y=\"{baseline:.1}\" xml:space=\"preserve\">"
        );
        for run in line {
            match run.color {
                Some(code) => {
                    let _ = write!(
                        out,
                        "<tspan fill=\"{}\">{}</tspan>",
                        color_of(code),
                        escape(&run.text)
                    );
                }
                None => out.push_str(&escape(&run.text)),
            }
        }
        out.push_str("</text>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// The lines of text an SVG made by [`svg`] holds: each `<text>` element
/// with its tags removed and its entities decoded — what the drawing
/// printed, without its colours.
///
/// ```
/// use graphene::viz::{svg, svg_text};
/// assert_eq!(svg_text(&svg("a < \x1b[31mb\x1b[0m\nc\n")), ["a < b", "c"]);
/// ```
pub fn svg_text(svg: &str) -> Vec<String> {
    svg.lines()
        .filter(|line| line.starts_with("<text"))
        .map(|line| {
            let mut text = String::new();
            let mut in_tag = false;
            for c in line.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&amp;", "&")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_holds_the_monochrome_text_line_for_line() {
        let colored = "a <b> & \x1b[32mT5:v2\x1b[0m \x1b[94mT6\x1b[0m\nsecond line\n";
        let plain = "a <b> & T5:v2 T6\nsecond line\n";
        let picture = svg(colored);
        assert_eq!(svg_text(&picture), plain.lines().collect::<Vec<_>>());
        // One tinted box per coloured run, at its column.
        assert_eq!(picture.matches("fill-opacity").count(), 2);
        assert!(picture.contains(&format!("x=\"{:.1}\"", MARGIN + 8.0 * CHAR_WIDTH)));
    }

    #[test]
    fn adjacent_runs_of_one_colour_merge_and_a_reset_ends_them() {
        let line = runs("\x1b[31mab\x1b[0m\x1b[31mc\x1b[0md");
        let texts: Vec<(&str, Option<u8>)> =
            line.iter().map(|r| (r.text.as_str(), r.color)).collect();
        assert_eq!(texts, [("abc", Some(31)), ("d", None)]);
    }
}
