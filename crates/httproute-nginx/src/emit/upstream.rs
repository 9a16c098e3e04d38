//! `split_clients`: shares of backends and mirrors in NGINX's steps.

use crate::conf::{Arg, Node};

use super::state::{Http, d};
use crate::conf::Directive;

impl Http {
    pub(super) fn split_var(&mut self) -> String {
        self.var("split")
    }

    /// The `split_clients` `s` that defines `$var`, unless it is defined already (by the same
    /// rule, written in another server).
    pub(super) fn push_split(&mut self, var: &str, s: Node) {
        if !self.defined.insert(var.to_owned()) {
            return;
        }
        self.split_n += 1;
        self.splits.push(Node::Blank);
        self.splits.push(s);
    }

    /// A `split_clients` on `$request_id` giving each value its share of the weights: its
    /// variable. Shares are written in NGINX's steps of 0.01% ([`basis_points`]).
    pub(super) fn split(&mut self, shares: Vec<(Arg, u32)>) -> String {
        let v = self.split_var();
        // A zero weight gets no requests (the plan leaves such backendRefs out already).
        let shares: Vec<_> = shares.into_iter().filter(|(_, w)| *w > 0).collect();
        let last = shares.len().saturating_sub(1);
        let weights: Vec<u32> = shares.iter().map(|(_, w)| *w).collect();
        let bp = basis_points(&weights);
        let mut entries = Vec::new();
        for (i, (value, _)) in shares.into_iter().enumerate() {
            let key = if i == last {
                Arg::code("*")
            } else if bp[i] > 0 {
                Arg::code(percent(bp[i]))
            } else {
                continue;
            };
            entries.push(Directive::entry(key).arg(value).into());
        }
        self.push_split(
            &v,
            d("split_clients").var("request_id").var(v.clone()).block(entries).into(),
        );
        v
    }
}

/// `bp` basis points (hundredths of a percent) as split_clients writes a share: `12.34%`.
pub(super) fn percent(bp: u64) -> String {
    format!("{}.{:02}%", bp / 100, bp % 100)
}

/// The shares of `weights` in basis points, as a `split_clients` block takes them: every share
/// but the last nonzero one is written (rounded down), that last one is `*` (the rest). NGINX
/// refuses a share of `0.00%`, so a nonzero weight whose share rounds down to nothing gets the
/// smallest step, 0.01%, taken from the largest share; the last is left at least 0.01% too.
/// The shares add up to 10,000 when some weight is nonzero (and at most 10,000 weights are:
/// the CRD allows 16 backendRefs).
pub fn basis_points(weights: &[u32]) -> Vec<u64> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    // The rest goes to the last nonzero weight (a zero weight gets nothing).
    let Some(last) = weights.iter().rposition(|&w| w > 0) else {
        return vec![0; weights.len()];
    };
    let mut bp: Vec<u64> = weights
        .iter()
        .map(|&w| match u64::from(w) * 10000 / total {
            0 if w > 0 => 1,
            b => b,
        })
        .collect();
    let mut given: u64 = bp[..last].iter().sum();
    while given + 1 > 10000 {
        // The largest share that can give a step (the first of equals).
        let Some(i) = (0..last).filter(|&i| bp[i] > 1).max_by_key(|&i| (bp[i], usize::MAX - i))
        else {
            break;
        };
        bp[i] -= 1;
        given -= 1;
    }
    bp[last] = 10000u64.saturating_sub(given);
    bp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of small, equal, huge and zero weights: the shares add up to 100%, a
    /// nonzero weight never gets 0.00% (NGINX refuses it), a zero weight gets nothing, and no
    /// share is off its exact value by more than the steps given to tiny shares.
    #[test]
    fn split_shares_are_representable_and_add_up() {
        let values = [0u32, 1, 2, 3, 7, 100, 9999, 20001, 1_000_000, u32::MAX / 16];
        let mut tried = 0;
        for n in 1..=4usize {
            let mut idx = vec![0usize; n];
            loop {
                let w: Vec<u32> = idx.iter().map(|&i| values[i]).collect();
                let bp = basis_points(&w);
                let total: u64 = w.iter().map(|&x| u64::from(x)).sum();
                if total > 0 {
                    assert_eq!(bp.iter().sum::<u64>(), 10000, "{w:?}: {bp:?}");
                    let tiny = w.iter().filter(|&&x| x > 0).count() as f64;
                    for (x, b) in w.iter().zip(&bp) {
                        assert_eq!(*x > 0, *b > 0, "{w:?}: {bp:?}");
                        let exact = f64::from(*x) * 10000.0 / total as f64;
                        assert!((exact - *b as f64).abs() <= tiny + 1.0, "{w:?}: {bp:?}");
                    }
                } else {
                    assert!(bp.iter().all(|&b| b == 0), "{w:?}: {bp:?}");
                }
                tried += 1;
                let mut k = 0;
                while k < n && idx[k] + 1 == values.len() {
                    idx[k] = 0;
                    k += 1;
                }
                if k == n {
                    break;
                }
                idx[k] += 1;
            }
        }
        assert_eq!(tried, 10 + 100 + 1000 + 10000);
        assert_eq!(basis_points(&[1, 20001]), [1, 9999]);
        assert_eq!(basis_points(&[20001, 1]), [9999, 1]);
        assert_eq!(percent(1), "0.01%");
        assert_eq!(percent(9999), "99.99%");
    }
}
