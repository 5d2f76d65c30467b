//! `cellcc-emu`: see `docs/emulator.md` and `cellcc-emu --help`.

use clap::Parser;

use cellcc_emu::cli::EmuArgs;
use cellcc_emu::emulator;

fn main() {
    let args = EmuArgs::parse();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let code = match args.validate() {
        Ok(config) => match emulator::run(config, command_line) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("cellcc-emu: error: {e}");
                e.exit_code()
            }
        },
        Err(e) => {
            eprintln!("cellcc-emu: error: {e}");
            cellcc_emu::cli::EXIT_USAGE
        }
    };
    std::process::exit(code);
}
