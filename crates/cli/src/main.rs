//! `tokscope`: the same engine and math as the web app, on the command line.

mod agent;
mod args;
mod bench;
mod engine;
mod generate;
mod headless;
mod inspect;
mod model_file;
mod probe;
mod roofline;
mod soak;
mod sweep;
mod tokenize;

use clap::Parser;
use std::process::ExitCode;

/// Every command returns this: a message for one clear line on stderr.
pub type CliResult = Result<(), String>;

fn main() -> ExitCode {
    headless::quiet_device_select();
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        // `tokscope roofline --list | head`: the reader closed the pipe; nothing went wrong.
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("error: internal error{at}: {msg} (please report this)");
    }));
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // clap's message spans lines (the missing arguments, then usage): keep one.
            let rendered = e.to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!(
                "error: {} (see tokscope --help)",
                message.join(" ").trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
    };
    let result = std::panic::catch_unwind(|| run(cli)).unwrap_or_else(|_| Err(String::new()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) if msg.is_empty() => ExitCode::from(101),
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: args::Cli) -> CliResult {
    if let Some(threads) = cli.threads {
        if threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        tokscope_core::cpu::parallel::set_threads(threads)?;
    }
    match cli.command {
        args::Command::Generate(a) => generate::run(a),
        args::Command::Inspect(a) => inspect::run(a),
        args::Command::Bench(a) => bench::run(a),
        args::Command::Probe(a) => probe::run(a),
        args::Command::Tokenize(a) => tokenize::run(a),
        args::Command::Soak(a) => soak::run(a),
        args::Command::Roofline(a) => roofline::run(a),
        args::Command::Agent(a) => agent::run(a),
    }
}
