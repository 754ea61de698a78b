//! Quiets a system Vulkan layer on machines with no display server.
//!
//! Mesa installs `VK_LAYER_MESA_device_select` as an implicit layer: whenever Vulkan lists its
//! GPUs, the layer asks the Wayland and X11 servers which GPU drives the screen, to put that one
//! first. Without `XDG_RUNTIME_DIR` (a cron job, a container, CI, `ssh` without a login session)
//! libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` to stderr,
//! twice, before any of tokscope's own output: two lines that read as tokscope's errors. With no
//! display server at all the layer has nothing to select by, so turning it off (its documented
//! switch, `NODEVICE_SELECT=1`) changes which GPU is found not at all and only drops the noise.

/// Sets `NODEVICE_SELECT=1` when no display server is configured and the user has not chosen.
///
/// Must run before any thread starts: the environment is process-wide.
pub fn quiet_device_select() {
    let unset = |name: &str| std::env::var_os(name).is_none_or(|v| v.is_empty());
    let headless = unset("XDG_RUNTIME_DIR") && unset("WAYLAND_DISPLAY") && unset("DISPLAY");
    if cfg!(target_os = "linux") && headless && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: called first thing in `main`, while the process has one thread, so nothing can
        // read the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
