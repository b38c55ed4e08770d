//! Drawing: the one grid renderer behind every drawing — labelled rows and
//! columns of right-aligned cells, separators where tiles change, optional
//! ANSI colours, rows elided past the style's height and columns wrapped
//! into panels past its width. Also the small text helpers the drawings share (captions, tile
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
    /// Appends the grid to `out`, one line per row, fitted to `style`: rows
    /// past the height are elided; columns past the width wrap into panels
    /// (each headed by the range of columns it holds), except in a
    /// summary's corner, whose columns are cut with a marker. A single
    /// column wider than the width is drawn anyway, with a note saying so.
    pub fn render(&self, style: &Style, out: &mut String) {
        if self.rows == 0 || self.cols == 0 {
            out.push_str("(no cells)\n");
            return;
        }
        let cap = self.corner.unwrap_or(u64::MAX);
        let shown_rows = self.rows.min(style.height.max(1) as u64).min(cap);
        let drawn_cols = self.cols.min(cap);
        let cells: Vec<Vec<Cell>> = (0..shown_rows)
            .map(|r| (0..drawn_cols).map(|c| (self.cell)(r, c)).collect())
            .collect();
        let grid = Grid {
            row_labels: (0..shown_rows).map(self.row_label).collect(),
            col_labels: (0..drawn_cols).map(self.col_label).collect(),
            cells,
        };
        let geometry = grid.geometry();
        let hidden_cols = self.cols - drawn_cols;
        if hidden_cols > 0 {
            // A summary's corner: the columns it leaves out are cut.
            let shown = geometry.fitting(0, grid.cols(), style.width.saturating_sub(2));
            grid.draw(&geometry, 0..shown, " …", style, out);
            self.more_rows(shown_rows, out);
            out.push_str(&format!("… {} more columns\n", self.cols - shown as u64));
            return;
        }
        let panels = geometry.panels(grid.cols(), style.width);
        if let [only] = &panels[..] {
            grid.draw(&geometry, only.clone(), "", style, out);
        } else {
            for panel in &panels {
                let (first, last) = (
                    &grid.col_labels[panel.start],
                    &grid.col_labels[panel.end - 1],
                );
                let header = format!("columns {first}-{last} (of {}):", self.cols);
                // Where the long form is wider than the grid keeps to (and
                // than prose's narrowest), the short form.
                let header = if header.chars().count() <= style.width.max(PROSE_WIDTH) {
                    header
                } else {
                    format!("columns {first}-{last}/{}:", self.cols)
                };
                out.push_str(&header);
                out.push('\n');
                grid.draw(&geometry, panel.clone(), "", style, out);
            }
        }
        self.more_rows(shown_rows, out);
        let narrowest = geometry.line_width(0..1);
        if narrowest > style.width {
            caption(
                &format!(
                    "(one column of this grid takes {narrowest} characters, more than the width \
                     {}; it is drawn one column at a time regardless)",
                    style.width
                ),
                style,
                out,
            );
        }
    }

    fn more_rows(&self, shown_rows: u64, out: &mut String) {
        if self.rows > shown_rows {
            out.push_str(&format!("… {} more rows\n", self.rows - shown_rows));
        }
    }
}

/// The cells a table draws, with their labels.
struct Grid {
    row_labels: Vec<String>,
    col_labels: Vec<String>,
    cells: Vec<Vec<Cell>>,
}

/// How wide a grid's parts are, the same in every panel so that panels
/// line up.
struct Geometry {
    label_width: usize,
    cell_width: usize,
    /// A separator before column `c` (never before column 0).
    col_break: Vec<bool>,
}

impl Geometry {
    /// The characters a line of columns `range` takes (a separator before
    /// the range's first column is not drawn).
    fn line_width(&self, range: std::ops::Range<usize>) -> usize {
        let breaks = self.col_break[range.start + 1..range.end]
            .iter()
            .filter(|&&b| b)
            .count();
        self.label_width + 2 + range.len() * (self.cell_width + 1) + 2 * breaks
    }

    /// How many columns from `start` fit in `width` characters (at least one).
    fn fitting(&self, start: usize, cols: usize, width: usize) -> usize {
        (start + 1..=cols)
            .take_while(|&end| self.line_width(start..end) <= width)
            .last()
            .map_or(1, |end| end - start)
    }

    /// The columns `0..cols` cut into consecutive panels that each fit the
    /// width (a panel holds one column when even that does not fit).
    fn panels(&self, cols: usize, width: usize) -> Vec<std::ops::Range<usize>> {
        let mut panels = Vec::new();
        let mut start = 0;
        while start < cols {
            let end = start + self.fitting(start, cols, width);
            panels.push(start..end);
            start = end;
        }
        panels
    }
}

impl Grid {
    fn cols(&self) -> usize {
        self.col_labels.len()
    }

    fn geometry(&self) -> Geometry {
        let label_width = self
            .row_labels
            .iter()
            .map(|l| width_of(l))
            .max()
            .unwrap_or(0);
        let cell_width = self
            .cells
            .iter()
            .flatten()
            .map(|cell| width_of(&cell.text))
            .chain(self.col_labels.iter().map(|l| width_of(l)))
            .max()
            .unwrap_or(1);
        let col_break = (0..self.cols())
            .map(|c| c > 0 && self.cells.iter().any(|row| row[c - 1].tile != row[c].tile))
            .collect();
        Geometry {
            label_width,
            cell_width,
            col_break,
        }
    }

    /// Draws the header and every row of columns `range`, each line ending
    /// in `tail`.
    fn draw(
        &self,
        geometry: &Geometry,
        range: std::ops::Range<usize>,
        tail: &str,
        style: &Style,
        out: &mut String,
    ) {
        let Geometry {
            label_width,
            cell_width,
            ref col_break,
        } = *geometry;
        let separated = |c: usize| c > range.start && col_break[c];
        let mut line = " ".repeat(label_width + 2);
        for c in range.clone() {
            if separated(c) {
                line.push_str("  ");
            }
            line.push_str(&format!(" {:>cell_width$}", self.col_labels[c]));
        }
        push_line(out, &line, tail);
        for (r, row) in self.cells.iter().enumerate() {
            let row_break = r > 0
                && range
                    .clone()
                    .any(|c| self.cells[r - 1][c].tile != row[c].tile);
            if row_break {
                let mut rule = format!("{} |", " ".repeat(label_width));
                for c in range.clone() {
                    if separated(c) {
                        rule.push_str("-+");
                    }
                    rule.push_str(&"-".repeat(cell_width + 1));
                }
                push_line(out, &rule, tail);
            }
            let mut line = format!("{:>label_width$} |", self.row_labels[r]);
            for c in range.clone() {
                if separated(c) {
                    line.push_str(" |");
                }
                line.push(' ');
                let padded = format!("{:>cell_width$}", row[c].text);
                line.push_str(&paint(&padded, row[c].color, style));
            }
            push_line(out, &line, tail);
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

/// The widest a caption's line gets, whatever the style's width: prose
/// past this is unreadable even on a slide, and a picture saved whole (a
/// grid thousands of characters wide) keeps its captions in lines.
const CAPTION_WIDTH: usize = 400;

/// The narrowest a line of prose gets, whatever the style's width: a
/// caption wraps there, and a panel's header keeps its long form there.
const PROSE_WIDTH: usize = 24;

/// Appends `text` word-wrapped to the style's width (at least
/// `PROSE_WIDTH` columns, at most `CAPTION_WIDTH`; a single word longer than
/// that stays whole on its own line).
pub(crate) fn caption(text: &str, style: &Style, out: &mut String) {
    let limit = style.width.clamp(PROSE_WIDTH, CAPTION_WIDTH);
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
    fn wide_grids_wrap_into_panels_of_every_column() {
        let style = Style::plain(30);
        let out = render(3, 100, &style, &|r, c| {
            Cell::in_tile(format!("{}", r * 100 + c), c / 7)
        });
        assert!(out.lines().all(|l| width_of(l) <= 30), "{out}");
        // Each panel names its columns; together they hold every column
        // once, in order, and each row's cells are its own.
        let mut next = 0;
        let mut panel: Option<(u64, u64)> = None;
        for line in out.lines() {
            if let Some(range) = line.strip_prefix("columns ") {
                let (first, rest) = range.split_once('-').unwrap();
                let last = rest.split_once(' ').unwrap().0;
                let (first, last): (u64, u64) = (first.parse().unwrap(), last.parse().unwrap());
                assert_eq!(first, next, "{out}");
                assert!(rest.ends_with("(of 100):"), "{line}");
                next = last + 1;
                panel = Some((first, last));
            } else if let Some((label, cells)) = line.split_once(" |") {
                let (first, last) = panel.expect("a panel heads every grid line");
                let Ok(row) = label.trim().parse::<u64>() else {
                    continue;
                };
                let values: Vec<u64> = cells
                    .split(|ch: char| ch == '|' || ch.is_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(|w| w.parse().unwrap())
                    .collect();
                let expected: Vec<u64> = (first..=last).map(|c| row * 100 + c).collect();
                assert_eq!(values, expected, "{line}");
            }
        }
        assert_eq!(next, 100, "{out}");
        assert!(!out.contains('…'), "{out}");
    }

    #[test]
    fn a_column_wider_than_the_width_is_drawn_and_said() {
        let out = render(1, 2, &Style::plain(4), &|_, c| {
            Cell::plain(format!("wide{c}"))
        });
        assert!(out.contains("columns 0-0 (of 2):\n"), "{out}");
        assert!(out.contains("columns 1-1 (of 2):\n"), "{out}");
        assert!(out.contains("0 | wide1"), "{out}");
        // The note is a caption, wrapped at 24 columns at the least.
        assert!(
            out.replace('\n', " ").ends_with(
                "(one column of this grid takes 9 characters, more than the width 4; it is drawn \
                 one column at a time regardless) "
            ),
            "{out}"
        );
    }

    #[test]
    fn a_summary_corner_is_cut_not_wrapped() {
        let table = Table {
            rows: 100,
            cols: 100,
            row_label: &index_label,
            col_label: &index_label,
            cell: &|r, c| Cell::plain(format!("{}", r * 100 + c)),
            corner: Some(8),
        };
        let mut out = String::new();
        table.render(&Style::plain(20), &mut out);
        assert!(!out.contains("columns "), "{out}");
        assert!(out.ends_with(" more columns\n"), "{out}");
        assert!(out.lines().all(|l| width_of(l) <= 20), "{out}");
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
