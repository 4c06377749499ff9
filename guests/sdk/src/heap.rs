//! The tool's global allocator: dlmalloc — the allocator of Rust's own wasm
//! std — whose first segment is an arena inside the module's initial memory.
//!
//! Std's allocator takes its first segment with `memory.grow`. The host runs
//! every call in a fresh instance from a pooled slot, so one grow costs it two
//! `mprotect`s per call (one to open the pages, one to close them when the
//! slot is reset), each a TLB shootdown on every core the process runs on:
//! about a third of a small call. The arena lives in `.bss`, which is part of
//! the initial memory the slot already has mapped (zeroed, and with no data
//! segment to copy), so a call whose heap fits in it never grows memory.
//! Past the arena, dlmalloc grows memory exactly as std does, and the host's
//! memory limit counts the arena like any other page.
//!
//! On by default (the `heap` feature). A tool that brings its own
//! `#[global_allocator]` turns the feature off.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::{Cell, UnsafeCell};
use core::ptr;

use dlmalloc::{Allocator, Dlmalloc};

/// Bytes of the arena: with the 1 MiB stack and a tool's data it stays inside
/// the 2 MiB per memory that the host keeps resident between calls.
const ARENA_BYTES: usize = 512 << 10;

const WASM_PAGE: usize = 64 << 10;

#[repr(C, align(16))]
struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: the arena is handed out once, to the one allocator below, which
// runs on wasm32 without threads.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_BYTES]));

/// dlmalloc's source of segments: the arena first, then `memory.grow`.
struct ArenaFirst {
    arena_taken: Cell<bool>,
}

// SAFETY: `alloc` returns memory no one else uses (the arena once, then fresh
// pages from `memory.grow`), zeroed, and never releases any.
unsafe impl Allocator for ArenaFirst {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        if !self.arena_taken.get() && size <= ARENA_BYTES {
            self.arena_taken.set(true);
            return (ARENA.0.get().cast(), ARENA_BYTES, 0);
        }
        let pages = size.div_ceil(WASM_PAGE);
        let previous = wasm32::memory_grow(0, pages);
        if previous == usize::MAX {
            return (ptr::null_mut(), 0, 0);
        }
        let base = previous * WASM_PAGE;
        let size = pages * WASM_PAGE;
        // A segment ending at the top of the 4 GiB address space would have
        // its end pointer wrap to 0; leave its last bytes out (as std does).
        let size = if base.wrapping_add(size) == 0 {
            size - 16
        } else {
            size
        };
        (base as *mut u8, size, 0)
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        // The arena is `.bss` of a fresh instance; grown pages are zeroed.
        true
    }

    fn page_size(&self) -> usize {
        WASM_PAGE
    }
}

/// The global allocator the SDK installs.
struct Heap(UnsafeCell<Dlmalloc<ArenaFirst>>);

// SAFETY: wasm32 without the `atomics` feature has one thread, so the
// allocator is never entered twice at once (the module is compiled only then).
unsafe impl Sync for Heap {}

impl Heap {
    #[allow(clippy::mut_from_ref)]
    fn dlmalloc(&self) -> &mut Dlmalloc<ArenaFirst> {
        // SAFETY: single-threaded (see `Sync` above), and no method below
        // re-enters the allocator while it holds this reference.
        unsafe { &mut *self.0.get() }
    }
}

// SAFETY: each method forwards to dlmalloc with the caller's layout.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { self.dlmalloc().malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { self.dlmalloc().calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.dlmalloc().free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            self.dlmalloc()
                .realloc(ptr, layout.size(), layout.align(), new_size)
        }
    }
}

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(Dlmalloc::new_with_allocator(ArenaFirst {
    arena_taken: Cell::new(false),
})));
