/// clang's arguments for a BPF congestion control, before the include
/// directories, the source and the output (`-g`: struct_ops needs the
/// object's BTF; `-O2`: the verifier needs optimised code). Shared by
/// build.rs, which adds -Werror for fatpipe's own ports.
pub const CLANG_ARGS: &[&str] = &["-O2", "-g", "-target", "bpf", "-Wall", "-D__TARGET_ARCH_x86"];
