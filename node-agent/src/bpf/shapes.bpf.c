// SPDX-License-Identifier: GPL-2.0
/* Not loaded: one global of each shape of jvm.h the loader decodes from the collectors'
 * maps, so that their BTF, and with it the Rust types of `skel::shapes::types`, is
 * generated once from the header (src/maps.rs decodes keys and values with them). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "jvm.h"

struct name_key shape_name_key = {};
struct vtable_name shape_vtable_name = {};
struct hist shape_hist = {};
struct inflight_key shape_inflight_key = {};
struct inflight_lost_key shape_inflight_lost_key = {};

char LICENSE[] SEC("license") = "GPL";
