//! The file behind a mapping as the kernel sees it (src/bpf/file_identity.bpf.c).
//!
//! `/proc/PID/maps` shows the device and inode of the path the process opened: under
//! overlayfs that is the container's overlay, a different device in every container even
//! when all of them map the same file of a shared image layer. The kernel places a uprobe
//! on the real inode underneath, so grouping by what `maps` shows would attach one more set
//! of programs to the same probe sites per container, and every one of them would count
//! each hit. This module asks the kernel instead: a task_vma iterator reads
//! `vma->vm_file->f_inode` of one mapping — the inode uprobes match — for one process.
use std::io::Read;
use std::mem::size_of;
use std::ptr::NonNull;

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Iter, Link};

use crate::discovery::FileId;
use crate::skel::consts::KDEV_MINOR_BITS;
use crate::skel::file_identity::types::mapped_file;
use crate::skel::file_identity::{FileIdentitySkel, FileIdentitySkelBuilder};

pub struct FileIdentity {
    skel: FileIdentitySkel<'static>,
}

impl FileIdentity {
    /// Loads the iterator program (needs kernel BTF and task_vma iterators, Linux 5.19+).
    pub fn load() -> Result<Self> {
        let open = FileIdentitySkelBuilder::default()
            .open(crate::collector::object_storage())
            .context("open file_identity.bpf.o")?;
        let skel = open.load().context("load file_identity.bpf.o (task_vma iterator)")?;
        Ok(FileIdentity { skel })
    }

    /// The identity of the file mapped at `start` in process `pid` (host pid), as the
    /// kernel's uprobes see it; None when no file mapping starts there (or the process is gone).
    pub fn of_mapping(&mut self, pid: u32, start: u64) -> Result<Option<FileId>> {
        self.skel.maps.bss_data.as_deref_mut().context("file_identity: no .bss")?.target_start =
            start;
        let link = self.attach_for(pid)?;
        let mut iter = Iter::new(&link).context("create the task_vma iterator")?;
        // A few records at most (one per thread group visited); read to the end.
        let mut buf = Vec::with_capacity(4 * size_of::<mapped_file>());
        iter.by_ref()
            .take(64 * size_of::<mapped_file>() as u64)
            .read_to_end(&mut buf)
            .context("read the task_vma iterator")?;
        Ok(decode(&buf))
    }

    /// The real file behind a file this process opened: maps one page of it (never
    /// touched) and names that mapping.
    pub fn of_open_file(&mut self, file: &std::fs::File) -> Result<Option<FileId>> {
        use std::os::fd::AsRawFd;
        const LEN: usize = 4096;
        // SAFETY: a private read-only mapping of an fd we hold, unmapped below, never read
        // (a file shorter than a page maps fine; only an access past its end would fault).
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            bail!("mmap: {}", std::io::Error::last_os_error());
        }
        let id = self.of_mapping(std::process::id(), addr as u64);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(addr, LEN) };
        id
    }

    /// An iterator link over the vmas of one process only (`bpf_iter_link_info.task.pid`;
    /// libbpf-rs exposes map and cgroup iterators only).
    fn attach_for(&self, pid: u32) -> Result<Link> {
        let mut info = libbpf_rs::libbpf_sys::bpf_iter_link_info::default();
        info.task.pid = pid;
        let opts = libbpf_rs::libbpf_sys::bpf_iter_attach_opts {
            sz: size_of::<libbpf_rs::libbpf_sys::bpf_iter_attach_opts>() as _,
            link_info: &mut info,
            link_info_len: size_of::<libbpf_rs::libbpf_sys::bpf_iter_link_info>() as _,
            ..Default::default()
        };
        let prog = self.skel.progs.mapped_file_identity.as_libbpf_object();
        // SAFETY: a loaded program of our skeleton and options that outlive the call.
        let ptr = unsafe { libbpf_rs::libbpf_sys::bpf_program__attach_iter(prog.as_ptr(), &opts) };
        let Some(ptr) = NonNull::new(ptr) else {
            bail!("attach the task_vma iterator to pid {pid}: {}", std::io::Error::last_os_error());
        };
        // SAFETY: a link libbpf just created and nobody else owns.
        Ok(unsafe { Link::from_ptr(ptr) })
    }
}

/// The first record of the iterator's output (it visits one process: every record names
/// the same mapping). `tgid` is the kernel's global pid, not compared with ours, which may
/// be in another pid namespace.
fn decode(buf: &[u8]) -> Option<FileId> {
    buf.chunks_exact(size_of::<mapped_file>()).find_map(|c| {
        let rec: mapped_file = crate::maps::decode(c)?;
        (rec.inode != 0).then_some(FileId {
            dev_major: rec.dev >> KDEV_MINOR_BITS,
            dev_minor: rec.dev & ((1 << KDEV_MINOR_BITS) - 1),
            inode: rec.inode,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(inode: u64, dev: u32, tgid: u32) -> Vec<u8> {
        let r = mapped_file { inode, dev, tgid };
        // SAFETY: mapped_file is plain old data (generated from the BPF header).
        unsafe { plain::as_bytes(&r) }.to_vec()
    }

    #[test]
    fn decodes_the_kernel_dev_t_from_raw_records() {
        let mut buf = record(0, 5, 99); // no inode: skipped
        buf.extend(record(9977886, 254 << 20 | 3, 42));
        buf.extend(record(7, 1 << 20, 42));
        assert_eq!(decode(&buf), Some(FileId { dev_major: 254, dev_minor: 3, inode: 9977886 }));
        assert_eq!(decode(&buf[..buf.len() - 1][16..20]), None, "a torn record is no record");
        assert_eq!(decode(&[]), None);
    }
}
