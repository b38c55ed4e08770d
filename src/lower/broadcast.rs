//! Stage 3, lowering: broadcast memory operands — views with a stride-0 mode
//! of more than one element (docs/language.md §5, "Broadcast views"). Their
//! elements are not contiguous, however their other modes lie: the same
//! offsets repeat. Such an input is read as its *distinct* elements — the
//! view with its stride-0 leaves cut to extent 1, loaded with the one access
//! that view allows — and each element takes the register of the distinct
//! element it repeats: a per-thread `[2,2 : 1,0]` of fp16 is one 4-byte load
//! whose word is used twice, `[2,2 : 0,1]` one 4-byte load whose halves are
//! each packed with themselves. Register operands need nothing of this: a
//! stride-0 mode names one register slot several times, which reading does
//! as it is.

use super::error::LowerError;
use super::kernel::KernelLowering;
use super::registers::half_class;
use super::views::OperandInfo;
use crate::expr::Expr;
use crate::ir::{Memory, View};
use crate::ptx::{Reg, RegClass};

/// The distinct elements of a broadcast memory operand.
///
/// Rule: element `e` of the operand (in element order) holds the value of
/// element `source[e]` of `distinct`, the same view with every stride-0 leaf
/// of extent > 1 cut to extent 1; `distinct` has no such leaf.
#[derive(Clone, PartialEq, Debug)]
pub struct Broadcast {
    /// The view without its repeats, analysed like any operand.
    pub distinct: OperandInfo,
    /// For each element, the distinct element it repeats.
    pub source: Vec<usize>,
}

/// Whether a leaf repeats one element: stride 0 over more than one.
fn repeats(extent: &Expr, stride: &Expr) -> bool {
    stride.as_const() == Some(0) && extent.as_const() != Some(1)
}

/// The view of a memory operand without its repeats and, for each of its
/// `count` elements, the element of that view it repeats; `None` for a view
/// with no stride-0 leaf of extent > 1 (or in registers, read as it is).
pub fn distinct_view(view: &View, count: usize) -> Option<(View, Vec<usize>)> {
    if view.ty.memory == Memory::Registers {
        return None;
    }
    // The leaves in element order: innermost level first, first leaf first.
    let leaves: Vec<(i64, bool)> = view
        .ty
        .levels
        .iter()
        .rev()
        .flat_map(|level| level.shape.leaves().into_iter().zip(level.stride.leaves()))
        .map(|(extent, stride)| (extent.as_const().unwrap_or(1), repeats(extent, stride)))
        .collect();
    if !leaves.iter().any(|(_, repeated)| *repeated) {
        return None;
    }
    let source = (0..count)
        .map(|element| {
            let (mut rest, mut place, mut index) = (element as i64, 1i64, 0i64);
            for (extent, repeated) in &leaves {
                let digit = rest % extent;
                rest /= extent;
                if !repeated {
                    index += digit * place;
                    place *= extent;
                }
            }
            index as usize
        })
        .collect();
    let mut distinct = view.clone();
    for level in &mut distinct.ty.levels {
        let strides: Vec<Expr> = level.stride.leaves().into_iter().cloned().collect();
        let mut leaf = 0;
        level.shape = level.shape.map(&mut |extent: &Expr| {
            let cut = repeats(extent, &strides[leaf]);
            leaf += 1;
            if cut { Expr::Const(1) } else { extent.clone() }
        });
    }
    Some((distinct, source))
}

impl KernelLowering<'_, '_> {
    /// The words of broadcast operand `op` (its element pairs, for 16-bit
    /// elements), in element order: the distinct elements are loaded once;
    /// a word that is one of theirs is reused, any other is packed from
    /// their halves.
    pub fn broadcast_words(
        &mut self,
        op: &OperandInfo,
        broadcast: &Broadcast,
    ) -> Result<Vec<Reg>, LowerError> {
        let distinct = &broadcast.distinct;
        if op.scalar.bytes() == 4 {
            let words = self.read_words(distinct)?;
            return Ok(broadcast.source.iter().map(|&s| words[s]).collect());
        }
        let words = if distinct.count % 2 == 0 {
            self.read_words(distinct)?
        } else {
            Vec::new()
        };
        let mut halves: Option<Vec<Reg>> = None;
        // Each pair of distinct elements is packed once, however often it repeats.
        let mut packed: Vec<((usize, usize), Reg)> = Vec::new();
        let mut result = Vec::with_capacity(broadcast.source.len() / 2);
        for pair in broadcast.source.chunks(2) {
            let (low, high) = (pair[0], pair.get(1).copied().unwrap_or(pair[0]));
            if !words.is_empty() && low % 2 == 0 && high == low + 1 {
                result.push(words[low / 2]);
                continue;
            }
            if let Some((_, word)) = packed.iter().find(|(key, _)| *key == (low, high)) {
                result.push(*word);
                continue;
            }
            let halves = match &mut halves {
                Some(halves) => halves,
                None => halves.insert(self.distinct_halves(distinct, &words)?),
            };
            let (low_half, high_half) = (halves[low], halves[high]);
            let word = self.out.reg(RegClass::B32);
            self.pack(word, low_half, high_half)?;
            packed.push(((low, high), word));
            result.push(word);
        }
        Ok(result)
    }

    /// One 16-bit register per element of a broadcast operand.
    pub fn broadcast_halves(&mut self, broadcast: &Broadcast) -> Result<Vec<Reg>, LowerError> {
        let halves = self.read_halves(&broadcast.distinct)?;
        Ok(broadcast.source.iter().map(|&s| halves[s]).collect())
    }

    /// The halves of the distinct elements: unpacked from their loaded
    /// `words`, or loaded one by one where they are not whole words.
    fn distinct_halves(
        &mut self,
        distinct: &OperandInfo,
        words: &[Reg],
    ) -> Result<Vec<Reg>, LowerError> {
        if words.is_empty() {
            return self.read_halves(distinct);
        }
        let class = half_class(distinct.scalar);
        let mut halves = Vec::with_capacity(distinct.count);
        for word in words {
            let (low, high) = self.unpack(*word, class)?;
            halves.extend([low, high]);
        }
        Ok(halves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::ir::{BufferId, Level, Scalar, TensorType};
    use crate::layout::Tuple;

    fn level(extents: &[i64], strides: &[i64]) -> Level {
        let tuple = |values: &[i64]| {
            Tuple::Node(
                values
                    .iter()
                    .map(|v| Tuple::Leaf(Expr::Const(*v)))
                    .collect(),
            )
        };
        Level {
            shape: tuple(extents),
            stride: tuple(strides),
        }
    }

    /// Each level's extents.
    fn extents(view: &View) -> Vec<Vec<i64>> {
        view.ty
            .levels
            .iter()
            .map(|level| {
                let leaves = level.shape.leaves();
                leaves
                    .into_iter()
                    .map(|e| e.as_const().unwrap_or(-1))
                    .collect()
            })
            .collect()
    }

    fn view(levels: Vec<Level>, memory: Memory) -> View {
        View {
            buffer: BufferId(0),
            base: Expr::Const(0),
            ty: TensorType {
                levels,
                scalar: Scalar::Fp16,
                memory,
                swizzle: None,
            },
            bounds: Vec::new(),
            span: Span::DUMMY,
        }
    }

    #[test]
    fn a_repeated_pair_is_its_pair_twice() {
        let v = view(vec![level(&[2, 2], &[1, 0])], Memory::Global);
        let (distinct, source) = distinct_view(&v, 4).expect("a broadcast");
        assert_eq!(extents(&distinct), vec![vec![2, 1]]);
        assert_eq!(source, [0, 1, 0, 1]);
    }

    #[test]
    fn a_pair_of_repeats_is_each_element_twice() {
        let v = view(vec![level(&[2, 2], &[0, 1])], Memory::Shared);
        let (distinct, source) = distinct_view(&v, 4).expect("a broadcast");
        assert_eq!(extents(&distinct), vec![vec![1, 2]]);
        assert_eq!(source, [0, 0, 1, 1]);
    }

    #[test]
    fn repeats_count_across_levels_innermost_first() {
        // Outer [2 : 0] repeats the inner [3 : 1]; element order runs the
        // inner level fastest.
        let v = view(vec![level(&[2], &[0]), level(&[3], &[1])], Memory::Global);
        let (distinct, source) = distinct_view(&v, 6).expect("a broadcast");
        assert_eq!(extents(&distinct), vec![vec![1], vec![3]]);
        assert_eq!(source, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn no_repeats_no_broadcast() {
        // Stride 0 over one element names it once; registers are read as
        // they are.
        assert_eq!(
            distinct_view(&view(vec![level(&[1, 4], &[0, 1])], Memory::Global), 4),
            None
        );
        assert_eq!(
            distinct_view(&view(vec![level(&[2, 2], &[0, 1])], Memory::Registers), 4),
            None
        );
    }
}
