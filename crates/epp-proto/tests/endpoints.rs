//! `endpoints::choose` against a plain model, and its work counted: the lookups it makes are
//! at most the cap (the block's size + SLACK), whatever the list's length (n and 2n elements cost the same).

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;

use epp_proto::endpoints::{Refusal, SLACK, choose, room};
use proptest::prelude::*;

/// The allowed set: 10.0.0.1..=10.0.0.`n` port 80, index `i - 1`.
fn pool(n: u32) -> HashMap<SocketAddr, u32> {
    (1..=n).map(|i| (format!("10.0.0.{i}:80").parse().unwrap(), i - 1)).collect()
}

/// Runs `choose` as the module does (`out` of `room` tries, `seen` of `pool.len()` bits);
/// the tries and the number of lookups made.
fn run(list: &[u8], pool: &HashMap<SocketAddr, u32>) -> (Vec<u32>, usize, usize) {
    let lookups = Cell::new(0);
    let mut out = vec![0; room(list, pool.len())];
    let mut seen = vec![0u8; pool.len().div_ceil(8)];
    let c = choose(
        list,
        pool.len(),
        |a| {
            lookups.set(lookups.get() + 1);
            pool.get(a).copied()
        },
        &mut out,
        &mut seen,
    );
    out.truncate(c.kept);
    (out, c.refused, lookups.get())
}

/// What `choose` must give: the first `cap` (+ SLACK) elements, parsed, those in the pool, first
/// occurrence of each, in order.
fn model(list: &str, pool: &HashMap<SocketAddr, u32>) -> Vec<u32> {
    let mut kept = Vec::new();
    for item in list.split(',').take(pool.len() + SLACK) {
        let Ok(a) = item.trim().parse::<SocketAddr>() else { continue };
        if a.port() == 0 {
            continue;
        }
        if let Some(&i) = pool.get(&a) {
            if !kept.contains(&i) {
                kept.push(i);
            }
        }
    }
    kept
}

/// An element: in the pool, outside it, or not an address at all.
fn element() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..12).prop_map(|i| format!("10.0.0.{i}:80")),
        (1u32..12).prop_map(|i| format!(" 10.0.0.{i}:80\t")),
        (1u32..5).prop_map(|i| format!("10.0.1.{i}:80")),
        Just("[::1]:80".to_owned()),
        Just("10.0.0.1:0".to_owned()),
        Just("pod.local:80".to_owned()),
        Just(String::new()),
    ]
}

proptest! {
    #[test]
    fn choose_is_the_model_and_looks_up_at_most_the_cap(
        n in 1u32..10,
        items in proptest::collection::vec(element(), 0..30),
    ) {
        let pool = pool(n);
        let list = items.join(",");
        let (kept, _, lookups) = run(list.as_bytes(), &pool);
        prop_assert_eq!(&kept, &model(&list, &pool));
        prop_assert!(lookups <= pool.len() + SLACK);
        let mut sorted = kept.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), kept.len());
    }
}

#[test]
fn the_work_does_not_grow_with_the_list() {
    let pool = pool(3);
    let outside = |n: usize| (0..n).map(|i| format!("10.9.{}.{}:80", i / 250, i % 250));
    for n in [1_000, 2_000] {
        let list: Vec<String> = outside(n).collect();
        let (kept, refused, lookups) = run(list.join(",").as_bytes(), &pool);
        assert_eq!((kept.len(), refused, lookups), (0, 8, 7), "n = {n}");
    }
    // The pool's members after the cap are not read.
    let list = format!("{},10.0.0.1:80", outside(7).collect::<Vec<_>>().join(","));
    assert_eq!(run(list.as_bytes(), &pool).0, Vec::<u32>::new());
}

#[test]
fn each_refusal_is_named() {
    let pool = pool(2);
    let mut out = [0; 2];
    let mut seen = [0u8; 1];
    let c = choose(b"10.0.0.2:80, 10.0.0.2:80", 2, |a| pool.get(a).copied(), &mut out, &mut seen);
    assert_eq!((c.kept, c.refused), (1, 1));
    assert_eq!(c.first, Some(Refusal::Repeated("10.0.0.2:80".parse().unwrap())));
    assert_eq!(c.first.unwrap().to_string(), "10.0.0.2:80 is repeated");
    let c = choose(b"x\n:1,10.0.0.1:80", 2, |a| pool.get(a).copied(), &mut out, &mut [0u8; 1]);
    assert_eq!(c.first.unwrap().to_string(), "\"x\\n:1\" is not ip:port");
    let c = choose(b"10.0.0.3:80,a,b", 2, |a| pool.get(a).copied(), &mut out, &mut [0u8; 1]);
    assert_eq!(
        c.refusals().unwrap(),
        "10.0.0.3:80 is not a server of the block (and 2 more); round robin"
    );
    assert_eq!(c.first.unwrap().to_string(), "10.0.0.3:80 is not a server of the block");
    assert_eq!(c.refused, 3);
    let c =
        choose(b"10.0.0.2:80, 10.0.0.2:80", 2, |a| pool.get(a).copied(), &mut out, &mut [0u8; 1]);
    assert_eq!(c.refusals().unwrap(), "10.0.0.2:80 is repeated; 1 tries");
    let c = choose(b"10.0.0.1:80", 2, |a| pool.get(a).copied(), &mut out, &mut [0u8; 1]);
    assert_eq!(c.refusals(), None);
}

/// A few refused elements (a stale or outside address, a repeat) do not hide a member after
/// them: pool {a, b}, list "x, y, a" reaches a.
#[test]
fn refused_elements_do_not_hide_a_member_after_them() {
    let pool = pool(2);
    let (kept, refused, _) = run(b"10.0.9.1:80,10.0.9.2:80,10.0.0.1:80", &pool);
    assert_eq!((kept, refused), (vec![0], 2));
}

/// The request's memory follows the list, not the block: `out` holds min(block, elements
/// read) tries (4 bytes each), so a one-element list costs one slot in a block of 1,000.
#[test]
fn the_tries_are_sized_by_the_list() {
    assert_eq!(room(b"10.0.0.1:80", 1_000), 1);
    assert_eq!(room(b"10.0.0.1:80,,x", 1_000), 3);
    let long = vec!["10.9.0.1:80"; 2_000].join(",");
    assert_eq!(room(long.as_bytes(), 1_000), 1_000);
    assert_eq!(room(long.as_bytes(), 3), 3);
    // A block of 70 (a bitset over two 64-bit words before, 9 bytes now): the last index.
    let pool = pool(70);
    let (kept, refused, _) = run(b"10.0.0.70:80,10.0.0.70:80", &pool);
    assert_eq!((kept, refused), (vec![69], 1));
}

/// A list with an element that is not `ip:port` is malformed (the module logs it as an
/// `[error]`); addresses outside the block or repeated are not (a stale view: `[warn]`).
#[test]
fn only_a_non_address_makes_the_list_malformed() {
    let pool = pool(2);
    let malformed = |list: &[u8]| {
        choose(list, 2, |a| pool.get(a).copied(), &mut [0; 2], &mut [0u8; 1]).malformed
    };
    // Outside, repeated, too long (the 7th element, not read, is not judged).
    assert!(!malformed(b"10.0.9.1:80,10.0.0.1:80,10.0.0.1:80,10.0.0.2:80,10.0.9.2:80,[::1]:80,x"));
    assert!(malformed(b"10.0.9.1:80,pod.local:80"));
}
