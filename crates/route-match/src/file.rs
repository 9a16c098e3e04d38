//! Reading a `matches.json` in two passes: from memory, or from a stream (a file) read twice,
//! through one reader that counts, follows strings and fences each list (`parse::Fenced`).
//!
//! The first pass finds each list's length; the second compiles each list after estimating it
//! by that length (`compile::compile_file_from`). A file read from a stream may change between
//! the passes: the second pass reads each list only as far as the first found it long, so
//! whatever the text becomes, no list is parsed past what it was estimated by.

use core::cell::Cell;
use std::io::Read;
use std::path::Path;

use alloc_meter::Scope;

use crate::compile::{
    Bounds, CompiledFile, FileError, REFUSAL_ROOM, compile_file_from, memory_error,
};
use crate::parse::{self, Fence, Fenced, ParseError, Syntax};

/// Compiles a file held in memory (both passes read the same bytes: no fence is needed).
pub(crate) fn compile_file(
    json: &[u8],
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, ParseError> {
    let scope = Scope::open_keeping(bounds.memory, REFUSAL_ROOM);
    // Before anything is allocated (see `compile::compile_list`).
    scope.check().map_err(|e| ParseError::memory(memory_error(e, "reading the file")))?;
    // The first pass reads through a counter (a stream reader over the slice): it records
    // each list's length, which the parse estimates the list by before it builds its tree.
    let survey = first_pass(json, &scope);
    compile_file_from(syntax, bounds, &scope, survey, 0, None, || {
        Ok(serde_json::Deserializer::from_slice(json))
    })
    .map_err(|e| match e {
        FileError::Parse(e) => e,
        FileError::Io(e) => ParseError::io(&e),
        FileError::Memory(m) => ParseError::memory(m),
    })
}

/// What is left of `scope` has room for `n` more bytes (and the system gives them: else
/// `system` is set, for the message).
fn room(scope: &Scope, system: &Cell<bool>, n: usize) -> bool {
    if scope.check().is_err() || n > alloc_meter::room() {
        return false;
    }
    let ok = alloc_meter::can_build(n);
    system.set(system.get() || !ok);
    ok
}

/// The first pass over a file (`parse::survey`), read through a counter for each list's
/// length, with the scope checked at every key before the set of keys grows: a growth past
/// what is left of `scope` ends it, and one the system refuses (an address-space limit, not
/// the limit) is told apart in [`parse::Survey::system_refused`].
fn first_pass<R: Read>(reader: R, scope: &Scope) -> parse::Survey {
    // Never set: the first pass is what finds the lengths.
    let fence = Fence::new();
    let room = |n| room(scope, &fence.system_refused, n);
    // A string that outgrows what is left stops the read (see `parse::Counted`).
    let read = Fenced::new(reader, &fence, &room);
    let pos = || fence.pos.get();
    let mut survey = parse::survey(serde_json::Deserializer::from_reader(read), &pos, &room);
    survey.out_of_memory |= fence.string_refused.get();
    survey.system_refused |= fence.system_refused.get();
    survey
}

/// A reader that fails once the compile's scope is spent: the parse stops within one buffer
/// (64 KiB of JSON) of the allocation that failed or went over the limit, so what it
/// allocates after that stays within the allocator's reserve.
struct Checked<'s, R> {
    inner: R,
    scope: &'s Scope,
}

impl<R: Read> Read for Checked<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.scope.check().map_err(std::io::Error::other)?;
        self.inner.read(buf)
    }
}

/// Compiles the file at `path`, read twice as a stream.
pub(crate) fn compile_path(
    path: &Path,
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, FileError> {
    let len = || std::fs::metadata(path).map(|m| m.len());
    compile_source(|| std::fs::File::open(path), len, syntax, bounds)
}

/// Compiles the text `open` reads from its start, once for each pass (and a third time, when
/// the second pass found a syntax error, to place it exactly: at most `len` bytes then).
pub(crate) fn compile_source<R: Read>(
    mut open: impl FnMut() -> std::io::Result<R>,
    len: impl FnOnce() -> std::io::Result<u64>,
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, FileError> {
    let scope = Scope::open_keeping(bounds.memory, REFUSAL_ROOM);
    // Before anything is allocated, the file's read buffer included (see `compile_list`).
    scope.check().map_err(|e| FileError::Memory(memory_error(e, "reading the file")))?;
    let buffer = read_buffer(bounds.memory);
    let mut checked = || -> std::io::Result<_> {
        let inner = Checked { inner: open()?, scope: &scope };
        Ok(std::io::BufReader::with_capacity(buffer, inner))
    };
    // The first pass through a counter, for each list's length (see `compile_file`).
    let survey = first_pass(checked().map_err(FileError::Io)?, &scope);
    // The second through the same reader, now fenced at each list's length.
    let fence = Fence::new();
    let room = |n| room(&scope, &fence.system_refused, n);
    let parse =
        || Ok(serde_json::Deserializer::from_reader(Fenced::new(checked()?, &fence, &room)));
    let compiled = compile_file_from(syntax, bounds, &scope, survey, buffer, Some(&fence), parse);
    match compiled {
        // serde_json places errors one column late when it reads from a stream (it cannot
        // give back the byte it peeked at): parse the text once more from memory, only now,
        // for the exact position, if the text and its parse fit in what is left of the
        // limit (the parse within what is left after the text); else the stream's position.
        Err(FileError::Parse(streamed)) => {
            let len = usize::try_from(len().map_err(FileError::Io)?).unwrap_or(usize::MAX);
            let room = alloc_meter::room();
            // The text, and at least as much again for its parse up to the error.
            if len.saturating_mul(2) > room {
                return Err(FileError::Parse(streamed));
            }
            let mut json = Vec::new();
            if json.try_reserve_exact(len).is_err() {
                return Err(FileError::Parse(streamed));
            }
            // At most `len` bytes: a file that grew since is not read past what was asked.
            open()
                .and_then(|f| f.take(len as u64).read_to_end(&mut json))
                .map_err(FileError::Io)?;
            // The parse from memory, in what is left of this scope (the text is counted in
            // it): a refusal for memory there keeps the stream's position.
            let left = Bounds { memory: alloc_meter::room(), ..bounds };
            match compile_file(&json, syntax, left) {
                Err(e) if e.is_memory() => Err(FileError::Parse(streamed)),
                other => other.map_err(FileError::Parse),
            }
        }
        other => other,
    }
}

/// The buffer a file is read through (each of its two passes has one, in turn): 64 KiB, or
/// an eighth of the limit when that is less (it is allocated before anything can be refused).
fn read_buffer(limit: usize) -> usize {
    (limit / 8).clamp(512, 64 * 1024)
}
