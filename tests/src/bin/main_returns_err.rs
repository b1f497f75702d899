//! A `#[pool::main]` whose `main` fails with `?`: the process must print the
//! error and exit non-zero (run by `tests/macros.rs`).

#[derive(Debug)]
struct ConfigMissing(&'static str);

impl std::fmt::Display for ConfigMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "missing configuration file {}", self.0)
    }
}

fn load(name: &'static str) -> Result<u32, ConfigMissing> {
    Err(ConfigMissing(name))
}

#[pool::main(worker_threads = 2)]
async fn main() -> Result<(), ConfigMissing> {
    let from_task = pool::spawn(async { load("settings.toml") })
        .await
        .expect("task ran");
    let value = from_task?;
    println!("unreachable: {value}");
    Ok(())
}
