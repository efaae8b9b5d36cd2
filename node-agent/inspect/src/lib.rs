//! The untrusted-input layer of the node agent.
//!
//! Everything here reads bytes that a container (or a JVM inside it) chose: the agent runs
//! privileged, so every parser is bounded (sizes, counts, string lengths), uses checked
//! arithmetic for offsets, never panics, and returns an [`Error`] that names what and where.
//! File access inside a container goes through [`root::ProcRoot`], which cannot be led
//! outside the container's root by symlinks or `..`. See `docs/untrusted-input.md`.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod bytes;
pub mod cgroup;
pub mod code_heap;
pub mod elf;
mod error;
pub mod hotspot;
pub mod hsperfdata;
pub mod jvm_limits;
pub mod limits;
pub mod log_lines;
pub mod options;
pub mod procfs;
pub mod root;
pub mod safepoint_log;

pub use error::Error;
