//! Drawing: the one grid renderer behind every drawing — labelled rows and
//! columns of right-aligned cells, separators where tiles change, optional
//! ANSI colours, and elision of what does not fit the style's width and
//! height. Also the small text helpers the drawings share (captions, tile
//! letters, colours).

use super::Style;

/// One cell of a grid.
///
/// Rule: `tile` decides the separators (a separator is drawn between two
/// neighbouring rows or columns wherever some pair of shown cells across it
/// has different tiles); `color` picks the ANSI colour when colour is on.
/// The text never contains a line break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cell {
    pub text: String,
    pub tile: Option<u64>,
    pub color: Option<u64>,
}

impl Cell {
    /// A cell belonging to no tile, uncoloured.
    pub fn plain(text: String) -> Cell {
        Cell {
            text,
            tile: None,
            color: None,
        }
    }

    /// A cell of tile `tile`, coloured by it.
    pub fn in_tile(text: String, tile: u64) -> Cell {
        Cell {
            text,
            tile: Some(tile),
            color: Some(tile),
        }
    }
}

/// A grid of `rows × cols` cells, produced on demand: only the cells that
/// are drawn are ever asked for, so a huge grid costs what its corner costs.
pub(crate) struct Table<'a> {
    pub rows: u64,
    pub cols: u64,
    pub row_label: &'a dyn Fn(u64) -> String,
    pub col_label: &'a dyn Fn(u64) -> String,
    pub cell: &'a dyn Fn(u64, u64) -> Cell,
    /// At most this many rows and columns are drawn (a summary's corner).
    pub corner: Option<u64>,
}

/// Index labels `0, 1, 2, …` for rows or columns.
pub(crate) fn index_label(i: u64) -> String {
    i.to_string()
}

impl Table<'_> {
    /// Appends the grid to `out`, one line per row, elided to `style`.
    pub fn render(&self, style: &Style, out: &mut String) {
        if self.rows == 0 || self.cols == 0 {
            out.push_str("(no cells)\n");
            return;
        }
        let cap = self.corner.unwrap_or(u64::MAX);
        let shown_rows = self.rows.min(style.height.max(1) as u64).min(cap);
        // Every column takes at least two characters, so no more can fit.
        let candidates = self.cols.min((style.width / 2).max(1) as u64).min(cap);
        let cells: Vec<Vec<Cell>> = (0..shown_rows)
            .map(|r| (0..candidates).map(|c| (self.cell)(r, c)).collect())
            .collect();
        let row_labels: Vec<String> = (0..shown_rows).map(self.row_label).collect();
        let col_labels: Vec<String> = (0..candidates).map(self.col_label).collect();
        let label_width = row_labels.iter().map(|l| width_of(l)).max().unwrap_or(0);
        let cell_width = cells
            .iter()
            .flatten()
            .map(|cell| width_of(&cell.text))
            .chain(col_labels.iter().map(|l| width_of(l)))
            .max()
            .unwrap_or(1);
        let col_break: Vec<bool> = (0..cells[0].len())
            .map(|c| c > 0 && cells.iter().any(|row| row[c - 1].tile != row[c].tile))
            .collect();
        let line_width = |n: usize| {
            let breaks = col_break[..n].iter().filter(|&&b| b).count();
            label_width + 2 + n * (cell_width + 1) + 2 * breaks
        };
        let all = cells[0].len();
        let shown_cols = if candidates == self.cols && line_width(all) <= style.width {
            all
        } else {
            (1..=all)
                .rev()
                .find(|&n| line_width(n) + 2 <= style.width)
                .unwrap_or(1)
        };
        let hidden_cols = self.cols - shown_cols as u64;
        let tail = if hidden_cols > 0 { " …" } else { "" };

        let mut line = " ".repeat(label_width + 2);
        for (c, label) in col_labels.iter().enumerate().take(shown_cols) {
            if col_break[c] {
                line.push_str("  ");
            }
            line.push_str(&format!(" {label:>cell_width$}"));
        }
        push_line(out, &line, tail);
        for (r, row) in cells.iter().enumerate() {
            let row_break = r > 0 && (0..shown_cols).any(|c| cells[r - 1][c].tile != row[c].tile);
            if row_break {
                let mut rule = format!("{} |", " ".repeat(label_width));
                for &brk in &col_break[..shown_cols] {
                    if brk {
                        rule.push_str("-+");
                    }
                    rule.push_str(&"-".repeat(cell_width + 1));
                }
                push_line(out, &rule, tail);
            }
            let mut line = format!("{:>label_width$} |", row_labels[r]);
            for (c, cell) in row.iter().enumerate().take(shown_cols) {
                if col_break[c] {
                    line.push_str(" |");
                }
                line.push(' ');
                let padded = format!("{:>cell_width$}", cell.text);
                line.push_str(&paint(&padded, cell.color, style));
            }
            push_line(out, &line, tail);
        }
        if self.rows > shown_rows {
            out.push_str(&format!("… {} more rows\n", self.rows - shown_rows));
        }
        if hidden_cols > 0 {
            out.push_str(&format!("… {hidden_cols} more columns\n"));
        }
    }
}

fn push_line(out: &mut String, line: &str, tail: &str) {
    out.push_str(line);
    out.push_str(tail);
    out.push('\n');
}

/// The number of characters a text takes on a terminal (all our texts are
/// one column per character).
pub(crate) fn width_of(text: &str) -> usize {
    text.chars().count()
}

/// Foreground colours that read on dark and light backgrounds alike.
const PALETTE: [u8; 12] = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94, 95, 96];

/// `text` in colour `color` (cycling through the palette) when the style
/// asks for colour; `text` unchanged otherwise.
pub(crate) fn paint(text: &str, color: Option<u64>, style: &Style) -> String {
    match color {
        Some(k) if style.color => {
            let code = PALETTE[(k % PALETTE.len() as u64) as usize];
            format!("\x1b[{code}m{text}\x1b[0m")
        }
        Some(_) | None => text.to_string(),
    }
}

/// The letter name of tile `k`: `a`…`z`, then `aa`, `ab`, … (bijective base
/// 26, like spreadsheet columns), so a cell's offset and its tile letter
/// never run together ambiguously.
pub(crate) fn tile_letter(k: u64) -> String {
    let mut letters = Vec::new();
    let mut n = k + 1;
    while n > 0 {
        n -= 1;
        letters.push(b'a' + (n % 26) as u8);
        n /= 26;
    }
    letters.reverse();
    String::from_utf8(letters).unwrap_or_default()
}

/// Appends `text` word-wrapped to the style's width (at least 24 columns; a
/// single word longer than that stays whole on its own line).
pub(crate) fn caption(text: &str, style: &Style, out: &mut String) {
    let limit = style.width.max(24);
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && width_of(&line) + 1 + width_of(word) > limit {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(rows: u64, cols: u64, style: &Style, cell: &dyn Fn(u64, u64) -> Cell) -> String {
        let table = Table {
            rows,
            cols,
            row_label: &index_label,
            col_label: &index_label,
            cell,
            corner: None,
        };
        let mut out = String::new();
        table.render(style, &mut out);
        out
    }

    #[test]
    fn separators_follow_tile_changes() {
        let out = render(2, 4, &Style::default(), &|r, c| {
            Cell::in_tile(format!("{}", r * 4 + c), c / 2)
        });
        assert_eq!(out, "    0 1   2 3\n0 | 0 1 | 2 3\n1 | 4 5 | 6 7\n");
    }

    #[test]
    fn wide_grids_are_elided_not_wrapped() {
        let style = Style::plain(30);
        let out = render(3, 100, &style, &|r, c| {
            Cell::plain(format!("{}", r * 100 + c))
        });
        assert!(out.lines().all(|l| width_of(l) <= 30), "{out}");
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with("… ") && last.ends_with(" more columns"),
            "{last}"
        );
        let shown = out.lines().nth(1).unwrap().split_whitespace().count() - 3;
        assert_eq!(last, format!("… {} more columns", 100 - shown));
    }

    #[test]
    fn tall_grids_are_elided() {
        let style = Style {
            height: 5,
            ..Style::default()
        };
        let out = render(12, 2, &style, &|r, c| Cell::plain(format!("{r}{c}")));
        assert_eq!(out.lines().count(), 1 + 5 + 1);
        assert!(out.ends_with("… 7 more rows\n"));
    }

    #[test]
    fn colour_only_wraps_cells() {
        let out = render(1, 2, &Style::default().colored(), &|_, c| {
            Cell::in_tile(c.to_string(), c)
        });
        assert!(out.contains("\x1b[31m0\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[32m1\x1b[0m"), "{out:?}");
    }

    #[test]
    fn tile_letters_are_bijective_base_26() {
        let names: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702]
            .into_iter()
            .map(tile_letter)
            .collect();
        assert_eq!(names, ["a", "b", "z", "aa", "ab", "az", "ba", "zz", "aaa"]);
    }

    #[test]
    fn captions_wrap_at_the_width() {
        let mut out = String::new();
        caption(
            "one two three four five six seven eight nine ten",
            &Style::plain(24),
            &mut out,
        );
        assert_eq!(out, "one two three four five\nsix seven eight nine ten\n");
    }
}
