//! Linear combinations of vector ranges, optionally followed by a linear [`Map`] (a decoder
//! that is not a sum of ranges, such as a coded mat-vec's LU solve or peeling).

use std::sync::Arc;

use outrun_runlog::event::Notes;

/// Where a term reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// The `i`-th result a parent accepted this iteration (acceptance order).
    Arrival(usize),
    /// The node's own computed part `k`.
    Own(usize),
    /// The combination of the node's children (its aggregator's output).
    Agg,
}

/// `out[to .. to+len] += coef · src[from .. from+len]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    /// Source vector.
    pub src: Src,
    /// Offset in the source.
    pub from: usize,
    /// Offset in the output.
    pub to: usize,
    /// Number of values.
    pub len: usize,
    /// Coefficient.
    pub coef: f64,
}

impl Term {
    /// `coef · src` over the whole length `len`.
    pub fn whole(src: Src, len: usize, coef: f64) -> Self {
        Term { src, from: 0, to: 0, len, coef }
    }
}

/// An output vector of `len` values as a sum of terms, with the quality of the decode that
/// produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct Combination {
    /// Output length.
    pub len: usize,
    /// The terms.
    pub terms: Vec<Term>,
    /// Decode residual (0 when nothing was decoded).
    pub residual: f64,
    /// Whether the output is the exact quantity (decoded within tolerance, or complete).
    pub exact: bool,
    /// Fraction of the data covered (< 1 only for estimates such as ignore-stragglers).
    pub coverage: f64,
    /// Children (indices) whose results contributed.
    pub used: Vec<usize>,
    /// Children (indices) whose results were received and rejected as corrupted.
    pub rejected: Vec<usize>,
    /// Worst condition number of the systems solved (0 when none).
    pub cond: f64,
    /// Rounds of results the decode needed (0 for single-round rules).
    pub rounds: usize,
    /// Results used per child (index, count), for multi-round rules.
    pub uses: Vec<(usize, usize)>,
    /// What the scheme adds to the iteration's log record (e.g. a clustered scheme's
    /// partition and responders).
    pub notes: Notes,
    /// A map applied after the terms: the terms then gather `post.0.in_len()` values, and the
    /// output is the map's `len` values.
    pub post: Option<Post>,
}

/// A linear map from gathered values to the output (a decoder that is not a sum of ranges).
pub trait Map: Send + Sync + std::fmt::Debug {
    /// Number of values it reads.
    fn in_len(&self) -> usize;
    /// Number of values it produces.
    fn out_len(&self) -> usize;
    /// The output.
    fn apply(&self, z: &[f64]) -> Vec<f64>;
}

/// A shared [`Map`] (equal when it is the same map).
#[derive(Clone, Debug)]
pub struct Post(pub Arc<dyn Map>);

impl PartialEq for Post {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Combination {
    /// An exact combination of the given terms.
    pub fn exact(len: usize, terms: Vec<Term>) -> Self {
        Combination {
            len,
            terms,
            residual: 0.0,
            exact: true,
            coverage: 1.0,
            used: vec![],
            rejected: vec![],
            cond: 0.0,
            rounds: 0,
            uses: vec![],
            notes: Notes::default(),
            post: None,
        }
    }

    /// These terms with every `Src::Agg` term replaced by the matching part of `agg`'s terms
    /// (so a message is built in one pass, without materialising the children's combination).
    pub fn substitute_agg(&self, agg: &Combination) -> Vec<Term> {
        let mut out = Vec::with_capacity(self.terms.len() + agg.terms.len());
        for t in &self.terms {
            if t.src != Src::Agg {
                out.push(*t);
                continue;
            }
            for a in &agg.terms {
                // overlap of agg's output range [a.to, a.to+a.len) with t's source range
                let lo = a.to.max(t.from);
                let hi = (a.to + a.len).min(t.from + t.len);
                if lo < hi {
                    out.push(Term {
                        src: a.src,
                        from: a.from + (lo - a.to),
                        to: t.to + (lo - t.from),
                        len: hi - lo,
                        coef: t.coef * a.coef,
                    });
                }
            }
        }
        out
    }

    /// The output of a combination with a [`Map`]: the gathered values mapped (None without a
    /// map; the combination's terms are then used as they are).
    pub fn mapped<V: Vector>(&self, own: &[V], arrivals: &[V]) -> Option<V> {
        let post = self.post.as_ref()?;
        let gathered = Combination::evaluate(post.0.in_len(), &self.terms, own, arrivals);
        Some(gathered.mapped(post.0.as_ref()))
    }

    /// [`Combination::evaluate`] for sources used once: where the first term (of those with a
    /// coefficient) is a whole source vector with coefficient 1 that no other term reads, that
    /// vector is taken from its slot (left empty) and the other terms are added to it in order —
    /// the same sums as from zero (0 + x = x), without a zeroed vector and a copy. A master's sum
    /// of results, and a worker's upload of its one part, cost no copy this way.
    pub fn evaluate_taking<V: Vector>(len: usize, terms: &[Term], own: &mut [V], arrivals: &mut [V]) -> V {
        let mut live = terms.iter().filter(|t| t.coef != 0.0 && t.len != 0);
        let Some(first) = live.next() else { return V::zeros(len) };
        let whole = first.coef == 1.0 && first.from == 0 && first.to == 0 && first.len == len;
        if !whole
            || first.src == Src::Agg
            || source(first.src, own, arrivals).len() != len
            || live.clone().any(|t| t.src == first.src)
        {
            return Combination::evaluate(len, terms, own, arrivals);
        }
        let slot = match first.src {
            Src::Arrival(i) => &mut arrivals[i],
            Src::Own(k) => &mut own[k],
            Src::Agg => unreachable!("checked"),
        };
        let mut out = std::mem::replace(slot, V::zeros(0));
        for t in live {
            out.add_scaled(t.to, source(t.src, own, arrivals), t.from, t.len, t.coef);
        }
        out
    }

    /// Evaluate `terms` into a new vector of `len` values.
    pub fn evaluate<V: Vector>(len: usize, terms: &[Term], own: &[V], arrivals: &[V]) -> V {
        let mut out = V::zeros(len);
        for t in terms {
            if t.coef == 0.0 || t.len == 0 {
                continue;
            }
            out.add_scaled(t.to, source(t.src, own, arrivals), t.from, t.len, t.coef);
        }
        out
    }
}

/// The vector a term reads.
fn source<'a, V>(src: Src, own: &'a [V], arrivals: &'a [V]) -> &'a V {
    match src {
        Src::Arrival(i) => &arrivals[i],
        Src::Own(k) => &own[k],
        Src::Agg => panic!("substitute the aggregate before evaluating"),
    }
}

/// A vector the node protocol can combine: real values, or only a length (timing simulations).
pub trait Vector: Clone {
    /// Whether the vectors carry values (false: lengths only, so decoders need not be built).
    const VALUES: bool = true;
    /// A zero vector of `len` values.
    fn zeros(len: usize) -> Self;
    /// Number of values.
    fn len(&self) -> usize;
    /// Whether it has no value.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A new vector of `src[from .. from+len]`.
    fn range(src: &Self, from: usize, len: usize) -> Self {
        let mut v = Self::zeros(len);
        v.copy_range(0, src, from, len);
        v
    }
    /// `self[to .. to+len] += coef · src[from .. from+len]`.
    fn add_scaled(&mut self, to: usize, src: &Self, from: usize, len: usize, coef: f64);
    /// `self[to .. to+len] = src[from .. from+len]`.
    fn copy_range(&mut self, to: usize, src: &Self, from: usize, len: usize);
    /// `map` applied to this vector.
    fn mapped(&self, map: &dyn Map) -> Self;
    /// The values (None: lengths only), for rules that look at them (robust decoding).
    fn values(&self) -> Option<&[f64]> {
        None
    }
    /// The values, mutably (None: lengths only), for faults injected into them.
    fn values_mut(&mut self) -> Option<&mut [f64]> {
        None
    }
}

impl Vector for Vec<f64> {
    fn values(&self) -> Option<&[f64]> {
        Some(self)
    }
    fn values_mut(&mut self) -> Option<&mut [f64]> {
        Some(self)
    }
    fn zeros(len: usize) -> Self {
        vec![0.0; len]
    }
    fn range(src: &Self, from: usize, len: usize) -> Self {
        src[from..from + len].to_vec()
    }
    fn len(&self) -> usize {
        <[f64]>::len(self)
    }
    fn add_scaled(&mut self, to: usize, src: &Self, from: usize, len: usize, coef: f64) {
        let dst = &mut self[to..to + len];
        let src = &src[from..from + len];
        if coef == 1.0 {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
        } else {
            dst.iter_mut().zip(src).for_each(|(d, s)| *d += coef * s);
        }
    }
    fn copy_range(&mut self, to: usize, src: &Self, from: usize, len: usize) {
        self[to..to + len].copy_from_slice(&src[from..from + len]);
    }
    fn mapped(&self, map: &dyn Map) -> Self {
        map.apply(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Frame;

    #[test]
    fn taking_a_source_gives_the_same_bits_as_evaluating_from_zero() {
        let v = |k: f64| Frame::from_vec((0..6).map(|i| (i as f64 - 2.5) * k + 0.1).collect());
        let (own, arrivals) = (vec![v(1.0), v(-3.0)], vec![v(0.7), v(2.0), v(-1.1)]);
        let whole = |src, coef| Term::whole(src, 6, coef);
        let part = |src, coef| Term { src, from: 1, to: 2, len: 3, coef };
        let cases = [
            // taken: a sum of results, one part, a weighted sum led by a coefficient of 1
            vec![whole(Src::Arrival(0), 1.0), whole(Src::Arrival(1), 1.0), whole(Src::Arrival(2), 1.0)],
            vec![whole(Src::Own(0), 1.0)],
            vec![whole(Src::Own(1), 0.0), whole(Src::Arrival(2), 1.0), part(Src::Own(0), -0.25)],
            // evaluated: a first coefficient not 1, a first source read twice, a part first
            vec![whole(Src::Arrival(0), 0.5), whole(Src::Arrival(1), 1.0)],
            vec![whole(Src::Arrival(1), 1.0), part(Src::Arrival(1), 2.0)],
            vec![part(Src::Own(0), 1.0), whole(Src::Arrival(0), 1.0)],
            vec![],
        ];
        for (c, terms) in cases.iter().enumerate() {
            let want = Combination::evaluate(6, terms, &own, &arrivals);
            let (mut o, mut a) = (own.clone(), arrivals.clone());
            let got = Combination::evaluate_taking(6, terms, &mut o, &mut a);
            let bits = |f: &Frame| f.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "case {c}");
            let taken = o.iter().chain(&a).filter(|f| f.len_values() == 0).count();
            assert_eq!(taken, usize::from(c < 3), "case {c}: one source taken where it may be");
        }
    }

    #[test]
    fn substitution_maps_ranges_and_multiplies_coefficients() {
        // agg = 2·A0 on [0,4) ; message = own + 0.5·agg[2..4) placed at [0,2)
        let agg = Combination::exact(4, vec![Term::whole(Src::Arrival(0), 4, 2.0)]);
        let enc = Combination::exact(
            2,
            vec![
                Term { src: Src::Own(0), from: 0, to: 0, len: 2, coef: 1.0 },
                Term { src: Src::Agg, from: 2, to: 0, len: 2, coef: 0.5 },
            ],
        );
        let terms = enc.substitute_agg(&agg);
        assert_eq!(terms[1], Term { src: Src::Arrival(0), from: 2, to: 0, len: 2, coef: 1.0 });
        let own = vec![vec![1.0, 1.0]];
        let arrivals = vec![vec![10.0, 20.0, 30.0, 40.0]];
        assert_eq!(Combination::evaluate(2, &terms, &own, &arrivals), vec![31.0, 41.0]);
    }
}
