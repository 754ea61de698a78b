//! The processes behind one browser — its WebDriver server, the browser it starts, the
//! browser's own helpers and, for WebKit, an Xvfb display — gone when the test ends, a failed
//! one's too. Each is started in a process group of its own and killed with everything that
//! descends from it: a driver killed alone leaves its browser running (Firefox and WebKit's
//! helpers reparent to init and keep their windows and memory).

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A child process killed, with all its descendants, when dropped.
pub(crate) struct Tree(Child);

impl Tree {
    /// Starts `cmd` in a new process group (so a signal to the test's own group spares it, and
    /// its group can be told apart from ours).
    pub fn spawn(mut cmd: Command) -> std::io::Result<Self> {
        cmd.process_group(0).kill_on_drop(true);
        cmd.spawn().map(Self)
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            kill_tree(pid as i32);
        }
    }
}

/// SIGKILLs `root`, everything descended from it (found through /proc before any is killed,
/// while the parent links still hold) and everything left in its process group.
fn kill_tree(root: i32) {
    let mut tree = vec![root];
    let parents = parent_links();
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    for pid in tree.iter().rev() {
        // SAFETY: kill(2) with a pid we found and a valid signal has no memory effects.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    // SAFETY: as above, for the process group the root leads.
    unsafe { libc::killpg(root, libc::SIGKILL) };
}

/// (pid, parent pid) of every process, read from /proc/*/stat.
fn parent_links() -> Vec<(i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid …": comm may hold spaces and parentheses; the last ')' ends it.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// An X display of its own for a browser that cannot run headless (MiniBrowser): Xvfb picks a
/// free display number and writes it to us (`-displayfd`).
pub(crate) struct Display {
    pub name: String,
    _server: Tree,
}

impl Display {
    pub async fn start() -> Result<Self, String> {
        let mut cmd = Command::new("Xvfb");
        cmd.args(["-displayfd", "1", "-screen", "0", "1920x1200x24", "-nolisten", "tcp"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut server = Tree::spawn(cmd).map_err(|e| format!("cannot start Xvfb: {e} (apt-get install xvfb)"))?;
        let out = server.child().stdout.take().expect("piped");
        let mut line = String::new();
        let mut out = BufReader::new(out);
        match tokio::time::timeout(Duration::from_secs(20), out.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => Ok(Self {
                name: format!(":{}", line.trim()),
                _server: server,
            }),
            _ => Err("Xvfb gave no display number within 20 s".into()),
        }
    }
}
