//! The module's `#[global_allocator]`: the system's, counted by [`alloc_meter`], with its
//! reserve (`alloc_meter::rescue`) turning a failed allocation into an error at the next
//! checkpoint.

use core::alloc::{GlobalAlloc, Layout};
use std::alloc::System;

use alloc_meter::{add, metered, rescue, sub};

/// The global allocator of the NGINX module: the system's, counted by the thread's meter, and
/// with the reserve that turns a failed allocation into an error at the next checkpoint (see
/// `alloc_meter`). The meter is safe code of its own crate; this is its one `unsafe` piece,
/// here because the guide keeps `unsafe` in `src/` and this crate, and route-match's memory
/// tests register it too.
pub struct Metered;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged (the retry
// after `rescue` repeats the same call) and only adds bookkeeping in thread-local cells and
// the reserve's lock (held only to move the reserve in or out; the reserve is freed after it,
// with the meter off, so this allocator re-entered for it neither counts nor locks); nothing
// here unwinds (`try_with`, saturating arithmetic, a poisoned lock taken as it is).
unsafe impl GlobalAlloc for Metered {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let mut p = unsafe { System.alloc(layout) };
        if p.is_null() && metered() && rescue() {
            // SAFETY: as above.
            p = unsafe { System.alloc(layout) };
        }
        if !p.is_null() && metered() {
            add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let mut p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() && metered() && rescue() {
            // SAFETY: as above.
            p = unsafe { System.alloc_zeroed(layout) };
        }
        if !p.is_null() && metered() {
            add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is `System.dealloc`'s (`ptr` came from
        // this allocator, which is `System`'s).
        unsafe { System.dealloc(ptr, layout) };
        if metered() {
            sub(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is `System.realloc`'s; a failed realloc
        // leaves `ptr` valid, so it can be tried again.
        let mut p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() && metered() && rescue() {
            // SAFETY: as above.
            p = unsafe { System.realloc(ptr, layout, new_size) };
        }
        if !p.is_null() && metered() {
            sub(layout.size());
            add(new_size);
        }
        p
    }
}
