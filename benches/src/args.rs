//! Command-line values shared by the bench binaries: each takes the next
//! argument or exits through the binary's own `usage` with what is wrong.

/// The next argument as a positive number; else `usage` says that `what`
/// takes one.
pub fn positive(it: &mut impl Iterator<Item = String>, what: &str, usage: fn(&str) -> !) -> u64 {
    it.next()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or_else(|| usage(&format!("{what} takes a positive number")))
}

/// The next argument as a comma-separated list of names, each one of
/// `known`; else `usage` names the first unknown one.
pub fn names(
    it: &mut impl Iterator<Item = String>,
    what: &str,
    known: &[&str],
    usage: fn(&str) -> !,
) -> Vec<String> {
    let list = it
        .next()
        .unwrap_or_else(|| usage(&format!("{what} takes a list")));
    let items: Vec<String> = list.split(',').map(str::to_owned).collect();
    if let Some(bad) = items.iter().find(|i| !known.contains(&i.as_str())) {
        usage(&format!("{what}: unknown {bad:?}"));
    }
    items
}
