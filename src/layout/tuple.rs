//! Stage 0, the algebra: the hierarchical tuple that shapes, strides and
//! coordinates are made of.

use std::fmt;

/// A hierarchical tuple: a leaf value, or an ordered list of sub-tuples.
///
/// Rule: a shape and its stride are *congruent* tuples (same tree, leaf for
/// leaf). `Node(vec![])` is the empty tuple `()` (rank 0, size 1). The leaf
/// type is generic so that the IR can hold symbolic dimensions (`M`, `K/2`)
/// in the same structure that the algebra fills with integers.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Tuple<T> {
    /// A single value, e.g. `4`.
    Leaf(T),
    /// A parenthesised list, e.g. `(4,(2,4))`.
    Node(Vec<Tuple<T>>),
}

impl<T> Tuple<T> {
    /// Number of top-level modes: 1 for a leaf, the list length for a node.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 4])]);
    /// assert_eq!(t.rank(), 2);
    /// assert_eq!(leaf(7).rank(), 1);
    /// ```
    pub fn rank(&self) -> usize {
        match self {
            Tuple::Leaf(_) => 1,
            Tuple::Node(modes) => modes.len(),
        }
    }

    /// Nesting depth: 0 for a leaf, 1 + the deepest mode for a node.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 4])]);
    /// assert_eq!(t.depth(), 2);
    /// assert_eq!(leaf(7).depth(), 0);
    /// ```
    pub fn depth(&self) -> usize {
        match self {
            Tuple::Leaf(_) => 0,
            Tuple::Node(modes) => 1 + modes.iter().map(Tuple::depth).max().unwrap_or(0),
        }
    }

    /// The leaves in order (left to right, depth first).
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 8])]);
    /// assert_eq!(t.leaves(), vec![&4, &2, &8]);
    /// ```
    pub fn leaves(&self) -> Vec<&T> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a T>) {
        match self {
            Tuple::Leaf(value) => out.push(value),
            Tuple::Node(modes) => modes.iter().for_each(|mode| mode.collect_leaves(out)),
        }
    }

    /// The same tree with every leaf mapped through `f`.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 8])]);
    /// assert_eq!(t.map(&mut |v| v * 10).to_string(), "(40,(20,80))");
    /// ```
    pub fn map<U>(&self, f: &mut impl FnMut(&T) -> U) -> Tuple<U> {
        match self {
            Tuple::Leaf(value) => Tuple::Leaf(f(value)),
            Tuple::Node(modes) => Tuple::Node(modes.iter().map(|mode| mode.map(f)).collect()),
        }
    }

    /// Whether `other` has the same tree as `self`, leaf for leaf.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let shape = Tuple::Node(vec![leaf(4), flat(&[2, 4])]);
    /// let stride = Tuple::Node(vec![leaf(2), flat(&[1, 8])]);
    /// assert!(shape.is_congruent(&stride));
    /// assert!(!shape.is_congruent(&flat(&[4, 8])));
    /// ```
    pub fn is_congruent<U>(&self, other: &Tuple<U>) -> bool {
        match (self, other) {
            (Tuple::Leaf(_), Tuple::Leaf(_)) => true,
            (Tuple::Node(a), Tuple::Node(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.is_congruent(y))
            }
            (Tuple::Leaf(_), Tuple::Node(_)) | (Tuple::Node(_), Tuple::Leaf(_)) => false,
        }
    }

    /// Number of leaves.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 4])]);
    /// assert_eq!(t.leaf_count(), 3);
    /// ```
    pub fn leaf_count(&self) -> usize {
        match self {
            Tuple::Leaf(_) => 1,
            Tuple::Node(modes) => modes.iter().map(Tuple::leaf_count).sum(),
        }
    }

    /// The same tree with every leaf mapped through a fallible `f`; the first
    /// error wins.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = flat(&[4, 0, 8]);
    /// let halved: Result<_, String> = t.try_map(&mut |&v| Ok(v / 2));
    /// assert_eq!(halved.unwrap().to_string(), "(2,0,4)");
    /// let checked = t.try_map(&mut |&v| if v > 0 { Ok(v) } else { Err(format!("zero leaf")) });
    /// assert_eq!(checked.unwrap_err(), "zero leaf");
    /// ```
    pub fn try_map<U, E>(&self, f: &mut impl FnMut(&T) -> Result<U, E>) -> Result<Tuple<U>, E> {
        match self {
            Tuple::Leaf(value) => Ok(Tuple::Leaf(f(value)?)),
            Tuple::Node(modes) => Ok(Tuple::Node(
                modes
                    .iter()
                    .map(|mode| mode.try_map(f))
                    .collect::<Result<_, E>>()?,
            )),
        }
    }

    /// A tuple with the tree of `self` whose leaves are taken, in order, from
    /// `values`; `None` if `values` runs out first.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let tree = Tuple::Node(vec![leaf(0), flat(&[0, 0])]);
    /// let filled = tree.rebuild_with(&mut [4, 2, 8].into_iter()).unwrap();
    /// assert_eq!(filled.to_string(), "(4,(2,8))");
    /// assert!(tree.rebuild_with(&mut [1, 2].into_iter()).is_none());
    /// ```
    pub fn rebuild_with<U>(&self, values: &mut impl Iterator<Item = U>) -> Option<Tuple<U>> {
        match self {
            Tuple::Leaf(_) => values.next().map(Tuple::Leaf),
            Tuple::Node(modes) => modes
                .iter()
                .map(|mode| mode.rebuild_with(values))
                .collect::<Option<Vec<_>>>()
                .map(Tuple::Node),
        }
    }

    /// The top-level modes: a leaf is its own single mode.
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 8])]);
    /// let modes: Vec<String> = t.modes().iter().map(|m| m.to_string()).collect();
    /// assert_eq!(modes, ["4", "(2,8)"]);
    /// assert_eq!(leaf(7).modes().len(), 1);
    /// ```
    pub fn modes(&self) -> Vec<&Tuple<T>> {
        match self {
            Tuple::Leaf(_) => vec![self],
            Tuple::Node(modes) => modes.iter().collect(),
        }
    }
}

impl<T: Clone> Tuple<T> {
    /// The leaves as a depth-1 tuple; a leaf stays a leaf (as in CuTe).
    ///
    /// ```
    /// use graphene::layout::int_tuple::{flat, leaf};
    /// use graphene::layout::Tuple;
    /// let t = Tuple::Node(vec![leaf(4), flat(&[2, 8])]);
    /// assert_eq!(t.flatten().to_string(), "(4,2,8)");
    /// assert_eq!(leaf(7).flatten().to_string(), "7");
    /// ```
    pub fn flatten(&self) -> Tuple<T> {
        match self {
            Tuple::Leaf(_) => self.clone(),
            Tuple::Node(_) => Tuple::Node(
                self.leaves()
                    .into_iter()
                    .cloned()
                    .map(Tuple::Leaf)
                    .collect(),
            ),
        }
    }
}

/// A single value is a leaf tuple: lets `complement(&a, 24)` take an integer
/// where a shape is expected.
impl<T> From<T> for Tuple<T> {
    fn from(value: T) -> Self {
        Tuple::Leaf(value)
    }
}

/// Writes CuTe's notation: `4`, `(4,(2,4))`, `()`.
impl<T: fmt::Display> fmt::Display for Tuple<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tuple::Leaf(value) => write!(f, "{value}"),
            Tuple::Node(modes) => {
                f.write_str("(")?;
                for (i, mode) in modes.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{mode}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tuple::{Leaf, Node};

    #[test]
    fn rank_depth_and_leaves() {
        let t = Node(vec![Leaf(4), Node(vec![Leaf(2), Leaf(4)])]);
        assert_eq!(t.rank(), 2);
        assert_eq!(t.depth(), 2);
        assert_eq!(t.leaves(), vec![&4, &2, &4]);
        assert_eq!(t.to_string(), "(4,(2,4))");
        assert_eq!(Leaf(7).rank(), 1);
        assert_eq!(Leaf(7).depth(), 0);
    }

    #[test]
    fn congruence_compares_trees_not_values() {
        let a = Node(vec![Leaf(4), Node(vec![Leaf(2), Leaf(4)])]);
        let b = Node(vec![Leaf(1), Node(vec![Leaf(8), Leaf(9)])]);
        let c = Node(vec![Leaf(1), Leaf(8)]);
        assert!(a.is_congruent(&b));
        assert!(!a.is_congruent(&c));
    }
}
