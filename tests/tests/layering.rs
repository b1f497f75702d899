//! The floor plan of `executor/src` (docs/ARCHITECTURE.md, "Floors"): every
//! module sits on a floor, and a file imports only its own floor and the
//! floors below it. This test reads the sources and fails on a back edge (a
//! lower floor naming a higher one), on a module that sits on no floor, on
//! an import between two modules of floor 4 (io, join and inspect are
//! independent of each other), on a `thread_local!` outside `context/`,
//! and on a file the architecture map does not name.
//!
//! What counts as an import: every path starting with `crate::` (in a `use`
//! or inline, groups `crate::{a, b}` included) and every `super::` path that
//! climbs out of its top-level module, outside comments and string
//! literals. A name defined at the crate root (a re-export of `lib.rs`)
//! counts as the public floor: lower floors import from the defining module.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tests::source_text::{code_only, ident, is_ident, module_path, repo_root, rust_files, src_dir};

/// (top-level module of `executor/src`, its floor, what the floor is).
/// `lib` is the crate root. `models` (the loom models, test code) may use
/// every floor and is not checked.
const FLOORS: &[(&str, u8)] = &[
    ("sync", 0),
    ("teeth", 0),
    ("unwind", 0),
    ("sleep", 1),
    ("task", 2),
    ("context", 3),
    ("scheduler", 3),
    ("join", 3),
    ("time", 3),
    ("inspect", 3),
    ("seeded", 3),
    ("sim", 3),
    ("tokio_compat", 3),
    ("io", 4),
    ("builder", 5),
    ("free_fns", 5),
    ("fs", 5),
    ("handle", 5),
    ("hyper", 5),
    ("join_set", 5),
    ("lib", 5),
    ("net", 5),
    ("pool", 5),
    ("process", 5),
    ("prometheus", 5),
    ("signal", 5),
    ("task_local", 5),
    ("task_spawns", 5),
];

const FLOOR_NAMES: &[&str] = &[
    "leaves: import nothing of the crate",
    "the sleep protocol",
    "tasks",
    "the runtime: scheduler, fork-join, timers, seeing inside, tokio hosting, seeded runs, the thread's context",
    "the I/O driver",
    "the public API",
];

/// Test code, allowed to reach any floor.
const UNCHECKED: &[&str] = &["models"];

/// The depth of inline modules (`mod name { .. }`) at each byte of `code`.
fn inline_module_depth(code: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut depth = vec![0; b.len() + 1];
    // A stack of brace depths at which an inline module opened.
    let mut opened: Vec<usize> = Vec::new();
    let mut braces = 0;
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || !is_ident(b[i - 1]);
        if at_word && code[i..].starts_with("mod ") {
            let rest = &code[i + 4..];
            let name = ident(rest.trim_start());
            let after = rest.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                opened.push(braces + 1);
            }
        }
        match b[i] {
            b'{' => braces += 1,
            b'}' => {
                if opened.last() == Some(&braces) {
                    opened.pop();
                }
                braces -= 1;
            }
            _ => {}
        }
        depth[i] = opened.len();
        i += 1;
    }
    depth
}

/// Every `super::` path of `code` (a file of module `me`) that climbs out
/// of the file's own module: where it stands, the module it climbs to (the
/// crate root is `[]`) and the path after its `super::`s. Inline modules
/// (`mod tests { .. }`, `depth`) are climbed out of first.
fn climbs_out<'a>(
    code: &'a str,
    depth: &[usize],
    me: &[String],
) -> Vec<(usize, Vec<String>, &'a str)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("super::") {
        if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
            continue; // part of a longer name, or the second `super` of a climb
        }
        let mut rest = &code[at..];
        let mut climbs: usize = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = r;
        }
        let climbs = climbs.saturating_sub(depth[at]);
        if climbs > 0 {
            out.push((at, me[..me.len().saturating_sub(climbs)].to_vec(), rest));
        }
    }
    out
}

/// The top-level modules a file refers to, with the line of each reference.
fn references(file: &Path, src: &str) -> Vec<(usize, String)> {
    let code = code_only(src);
    let depth = inline_module_depth(&code);
    let me = module_path(file);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut refs = Vec::new();
    let b = code.as_bytes();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b'$') {
            continue; // `$crate::` in a macro, or part of a longer name
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c}`: the names at the group's top level.
            let mut level = 0;
            let mut expect_name = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => expect_name = true,
                    c if c.is_whitespace() => {}
                    _ if expect_name && level == 0 => {
                        refs.push((line_of(at), ident(&group[k..]).to_string()));
                        expect_name = false;
                    }
                    _ => {}
                }
            }
        } else {
            refs.push((line_of(at), ident(rest).to_string()));
        }
    }
    for (at, base, rest) in climbs_out(&code, &depth, &me) {
        let target = match base.first() {
            Some(top) => top.clone(),
            None => ident(rest).to_string(), // the crate root
        };
        refs.push((line_of(at), target));
    }
    refs
}

/// The files of test modules (declared `mod name;` under a `#[cfg(..)]`
/// that names `test`, such as `time/tests.rs`): test code, which may use
/// every floor, as `models/` may.
fn test_module_files(root: &Path, files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let code = code_only(&std::fs::read_to_string(root.join(file)).unwrap());
        let lines: Vec<&str> = code.lines().map(str::trim).collect();
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for k in 1..lines.len() {
            let is_test = lines[k - 1].starts_with("#[cfg(") && lines[k - 1].contains("test");
            let Some(name) = lines[k]
                .strip_suffix(';')
                .and_then(|l| l.rsplit_once("mod "))
                .map(|(_, name)| name.trim())
            else {
                continue;
            };
            if is_test {
                for candidate in [
                    dir.join(format!("{name}.rs")),
                    dir.join(name).join("mod.rs"),
                ] {
                    if files.contains(&candidate) {
                        out.push(candidate);
                    }
                }
            }
        }
    }
    out
}

fn floor_of(module: &str) -> Option<u8> {
    FLOORS.iter().find(|(m, _)| *m == module).map(|&(_, f)| f)
}

#[test]
fn every_file_imports_only_its_floor_and_the_floors_below() {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let top_modules: Vec<String> = files
        .iter()
        .filter_map(|f| module_path(f).first().cloned())
        .collect();
    let mut problems = String::new();
    for top in &top_modules {
        if floor_of(top).is_none() && !UNCHECKED.contains(&top.as_str()) {
            writeln!(
                problems,
                "executor/src: module `{top}` sits on no floor: add it to FLOORS in \
                 tests/tests/layering.rs and to docs/ARCHITECTURE.md"
            )
            .unwrap();
        }
    }
    let mut by_file: BTreeMap<String, usize> = BTreeMap::new();
    let tests = test_module_files(&root, &files);
    for file in &files {
        let me = module_path(file);
        let top = me.first().map_or("lib", String::as_str);
        if UNCHECKED.contains(&top) || tests.contains(file) {
            continue;
        }
        let Some(my_floor) = floor_of(top) else {
            continue;
        };
        let src = std::fs::read_to_string(root.join(file)).unwrap();
        let shown = format!("executor/src/{}", file.display());
        // `task_local.rs` holds the `task_local!` macro, whose expansion
        // defines a thread-local in the crate that invokes it, not in ours.
        if !["context", "task_local"].contains(&top) && code_only(&src).contains("thread_local!") {
            writeln!(
                problems,
                "{shown}: a `thread_local!` outside context.rs: every thread-local of the \
                 crate lives in executor/src/context.rs"
            )
            .unwrap();
        }
        for (line, target) in references(file, &src) {
            let target_module = if top_modules.contains(&target) {
                target.as_str()
            } else {
                "lib" // an item of the crate root
            };
            if target_module == top {
                continue;
            }
            let Some(their_floor) = floor_of(target_module) else {
                continue; // `models`, test code
            };
            let why = if their_floor > my_floor {
                "a floor imports only the floors below it"
            } else if my_floor == 0 {
                "a leaf imports nothing of the crate"
            } else if their_floor == my_floor && my_floor == 4 {
                "io, join and inspect do not import each other"
            } else {
                continue;
            };
            *by_file.entry(shown.clone()).or_default() += 1;
            writeln!(
                problems,
                "{shown}:{line}: imports `{target}` (floor {their_floor}, {}) from `{top}` \
                 (floor {my_floor}, {}): {why}",
                FLOOR_NAMES[usize::from(their_floor)],
                FLOOR_NAMES[usize::from(my_floor)],
            )
            .unwrap();
        }
    }
    assert!(
        problems.is_empty(),
        "the floor plan of executor/src is broken:\n{problems}"
    );
}

#[test]
fn the_architecture_map_names_every_file() {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let map = std::fs::read_to_string(root.join("../../docs/ARCHITECTURE.md")).unwrap();
    let missing: Vec<String> = files
        .iter()
        .map(|f| f.display().to_string())
        .filter(|f| !f.starts_with("models/") && !map.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's map of the crate does not name {missing:?}: add a row for each"
    );
}

/// The checker itself: a back edge, a group import, a climb out of the
/// module and a thread-local are all seen, comments and strings are not.
#[test]
fn the_checker_sees_imports_and_ignores_comments_and_strings() {
    let src = r#"
        // use crate::pool::Pool;
        /* crate::builder */
        use crate::{sync, task::TaskId};
        use super::super::scheduler::Registry;
        const S: &str = "crate::hyper";
        const C: char = '"';
        fn f() -> usize { crate::scheduler::count() }
        mod tests { use super::*; }
    "#;
    let refs = references(Path::new("sleep/state.rs"), src);
    let names: Vec<&str> = refs.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        ["sync", "task", "scheduler", "scheduler"],
        "{refs:?}"
    );
    assert!(!code_only("let x = \"thread_local!\";").contains("thread_local!"));
}

/// The segments of every path in a use tree starting at `s` (just past
/// `crate::`, `super::` or a child module's `name::`): `a::b::{c, d::e}`
/// gives `[a, b, c]` and `[a, b, d, e]`. A path stops at a segment that is
/// not a plain name (`*`, `self`).
fn use_tree_paths(s: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut prefix = Vec::new();
    let mut rest = s;
    loop {
        let r = rest.trim_start();
        if let Some(group) = r.strip_prefix('{') {
            // Split the group at its top-level commas.
            let mut level = 0;
            let mut start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' | ',' if level == 0 => {
                        // `a::{self, b}` names `a` itself.
                        if group[start..k].trim() == "self" && !prefix.is_empty() {
                            out.push(prefix.clone());
                        }
                        for mut p in use_tree_paths(&group[start..k]) {
                            let mut full = prefix.clone();
                            full.append(&mut p);
                            out.push(full);
                        }
                        if c == '}' {
                            return out;
                        }
                        start = k + 1;
                    }
                    '}' => level -= 1,
                    _ => {}
                }
            }
            return out;
        }
        let name = ident(r);
        if name.is_empty() || name == "self" {
            if !prefix.is_empty() {
                out.push(prefix);
            }
            return out;
        }
        prefix.push(name.to_string());
        match r[name.len()..].strip_prefix("::") {
            Some(more) => rest = more,
            None => {
                out.push(prefix);
                return out;
            }
        }
    }
}

/// How a reader turns a file's imports into edges between files: the
/// layering test's three readings, which must agree.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reading {
    /// A name re-exported by a `mod.rs` followed to the file that defines it.
    Resolved,
    /// The file a path names as written: `crate::context::budget` is
    /// `context/mod.rs`, whose `pub use cells::budget` is its own import.
    Plain,
    /// As `Plain`, and a `mod.rs` also reaches every file it declares
    /// (`mod cells;`): what a reader opening it is led to.
    ModReach,
}

/// The file-level import graph of `executor/src` (models excluded): an
/// edge from a file to every file whose item it names (as `reading` reads
/// a name) and to the file that defines a method it calls, where a type's
/// methods are spread over several files (`Registry::spawn_blocking` in
/// `scheduler/spawn.rs`) and the method's name is the crate's only one.
struct ImportGraph {
    files: Vec<Vec<String>>,
    edges: Vec<std::collections::BTreeSet<usize>>,
    /// For each file, the imports that name one file and are defined in
    /// another (a re-export followed): (line, path as written, defining file).
    through_reexports: Vec<Vec<(usize, String, usize)>>,
}

impl ImportGraph {
    fn read(reading: Reading) -> ImportGraph {
        let root = src_dir();
        let mut paths = Vec::new();
        rust_files(&root, &root, &mut paths);
        paths.retain(|p| !p.starts_with("models"));
        let files: Vec<Vec<String>> = paths.iter().map(|p| module_path(p)).collect();
        let codes: Vec<String> = paths
            .iter()
            .map(|p| code_only(&std::fs::read_to_string(root.join(p)).unwrap()))
            .collect();
        Self::from_sources(files, &codes, reading)
    }

    fn from_sources(files: Vec<Vec<String>>, codes: &[String], reading: Reading) -> ImportGraph {
        // Each file's re-exports: (name as seen from outside, full path).
        let reexports: Vec<Vec<(String, Vec<String>)>> = (0..files.len())
            .map(|i| {
                let mut out = Vec::new();
                for line in Self::statements(&codes[i]) {
                    let Some(body) = Self::is_reexport(&line) else {
                        continue;
                    };
                    let body = body.trim_end_matches(';');
                    for path in Self::paths_from(&files, &files[i], body) {
                        // `a::b::{X as Y}`: the alias is what callers name.
                        let last = path.last().unwrap().clone();
                        let alias = body
                            .split(&format!("{last} as "))
                            .nth(1)
                            .map(|a| ident(a).to_string())
                            .unwrap_or(last);
                        out.push((alias, path));
                    }
                }
                out
            })
            .collect();
        let methods = Self::split_methods(codes);
        let mut graph = ImportGraph {
            edges: vec![Default::default(); files.len()],
            through_reexports: vec![Vec::new(); files.len()],
            files,
        };
        for (i, full_code) in codes.iter().enumerate() {
            let me = graph.files[i].clone();
            // A re-export is no use of what it names: whoever imports
            // through it is led to the defining file (`resolve`). Read
            // plainly, it is an import of the file it names.
            if reading != Reading::Resolved {
                for (_, target) in &reexports[i] {
                    if let Some(j) = graph.resolve(&reexports, target, usize::MAX) {
                        if j != i {
                            graph.edges[i].insert(j);
                        }
                    }
                }
            }
            let code = &Self::without_reexports(full_code);
            let line_of = |at: usize| code[..at].matches('\n').count() + 1;
            let depth = inline_module_depth(code);
            let b = code.as_bytes();
            let mut targets: Vec<(usize, Vec<String>)> = Vec::new();
            for (at, _) in code.match_indices("crate::") {
                if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b'$') {
                    continue;
                }
                for p in use_tree_paths(&code[at + "crate::".len()..]) {
                    targets.push((at, p));
                }
            }
            for (at, base, rest) in climbs_out(code, &depth, &me) {
                for p in use_tree_paths(rest) {
                    targets.push((at, base.iter().cloned().chain(p).collect()));
                }
            }
            // A child module named from its parent (`use search::X`, `search::f()`).
            for child in &graph.files {
                if child.len() != me.len() + 1 || !child.starts_with(&me) {
                    continue;
                }
                let name = format!("{}::", child.last().unwrap());
                for (at, _) in code.match_indices(&name) {
                    if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
                        continue;
                    }
                    for p in use_tree_paths(&code[at..]) {
                        targets.push((at, me.iter().cloned().chain(p).collect()));
                    }
                }
            }
            // A module imported by name (`use crate::context;`): its uses
            // (`context::budget()`) name what they reach.
            let mut more = Vec::new();
            let mut named_modules = Vec::new();
            for (_, t) in &targets {
                let is_module = graph.files.iter().any(|f| f == t);
                let Some(alias) = t.last().filter(|_| is_module && *t != me) else {
                    continue;
                };
                let name = format!("{alias}::");
                for (at, _) in code.match_indices(&name) {
                    if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':') {
                        continue;
                    }
                    for p in use_tree_paths(&code[at + name.len()..]) {
                        more.push((at, t.iter().cloned().chain(p).collect::<Vec<_>>()));
                        named_modules.push(t.clone());
                    }
                }
            }
            targets.retain(|(_, t)| !named_modules.contains(t));
            for (at, t) in targets.into_iter().chain(more) {
                let plain = graph.resolve(&reexports, &t, usize::MAX);
                let resolved = graph.resolve(&reexports, &t, 0);
                if let (Some(p), Some(r)) = (plain, resolved) {
                    if p != r && r != i {
                        graph.through_reexports[i].push((line_of(at), t.join("::"), r));
                    }
                }
                let target = if reading == Reading::Resolved {
                    resolved
                } else {
                    plain
                };
                if let Some(j) = target {
                    if j != i {
                        graph.edges[i].insert(j);
                    }
                }
            }
            // A method of a type whose methods are spread over files.
            for (ty, name, j) in &methods {
                let calls = [
                    format!(".{name}("),
                    format!(".{name}::<"),
                    format!("{ty}::{name}("),
                ];
                // A call on a value of the type: the file names the type
                // (a method of another crate with the same name is not one).
                let names_word = |text: &str| {
                    let t = text.as_bytes();
                    text.match_indices(ty.as_str()).any(|(at, _)| {
                        (at == 0 || !is_ident(t[at - 1]))
                            && !t.get(at + ty.len()).is_some_and(|&c| is_ident(c))
                    })
                };
                // A file that imports a type of that name from another
                // crate (`use tokio::runtime::Handle;`) calls that one's.
                let imports_foreign = code.lines().any(|line| {
                    let line = line.trim();
                    let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
                    line.strip_prefix("use ").is_some_and(|path| {
                        !["crate::", "super::", "self::"]
                            .iter()
                            .any(|own| path.starts_with(own))
                            && names_word(path)
                    })
                });
                let names_type = names_word(code) && !imports_foreign;
                if *j != i && names_type && calls.iter().any(|c| code.contains(c.as_str())) {
                    if std::env::var_os("LAYERING_DEBUG").is_some() {
                        eprintln!(
                            "method edge {:?} -> {:?}: {ty}::{name}",
                            graph.files[i], graph.files[*j]
                        );
                    }
                    graph.edges[i].insert(*j);
                }
            }
            // A folder's `mod.rs` leads to every file it declares.
            if reading == Reading::ModReach {
                for (j, f) in graph.files.iter().enumerate() {
                    let declared = f.len() == me.len() + 1
                        && f.starts_with(&me)
                        && Self::declares(code, f.last().unwrap());
                    if declared && j != i {
                        graph.edges[i].insert(j);
                    }
                }
            }
        }
        graph
    }

    /// Does `code` declare the child module `name` (`mod name;`, any
    /// visibility)? A test module (a `#[cfg(..test..)]` on the line before) is
    /// not one a reader of the folder is led to.
    fn declares(code: &str, name: &str) -> bool {
        let lines: Vec<&str> = code.lines().map(str::trim).collect();
        (0..lines.len()).any(|k| {
            lines[k].ends_with(&format!("mod {name};"))
                && !(k > 0 && lines[k - 1].starts_with("#[cfg(") && lines[k - 1].contains("test"))
        })
    }

    /// The methods of the types whose inherent `impl` blocks are spread over
    /// more than one file, each with the file that defines it: only names no
    /// other inherent method of the crate has, so a call names its file.
    fn split_methods(codes: &[String]) -> Vec<(String, String, usize)> {
        // (type, method, file) of every inherent method.
        let mut all: Vec<(String, String, usize)> = Vec::new();
        for (i, code) in codes.iter().enumerate() {
            let b = code.as_bytes();
            for (at, _) in code.match_indices("impl") {
                if (at > 0 && is_ident(b[at - 1])) || b.get(at + 4).is_some_and(|&c| is_ident(c)) {
                    continue;
                }
                // `impl<..> Type<..> {`, not `impl Trait for Type {`.
                let Some(open) = code[at..].find('{').map(|n| at + n) else {
                    continue;
                };
                let head = &code[at + 4..open];
                if head.contains(" for ") || head.contains(';') || head.contains('}') {
                    continue;
                }
                let mut head = head.trim_start();
                if head.starts_with('<') {
                    let mut level = 0;
                    let mut end = 0;
                    for (k, c) in head.char_indices() {
                        match c {
                            '<' => level += 1,
                            '>' if level == 1 => {
                                end = k + 1;
                                break;
                            }
                            '>' => level -= 1,
                            _ => {}
                        }
                    }
                    head = head[end..].trim_start();
                }
                let ty = ident(head.rsplit("::").next().unwrap_or(head).trim_start()).to_string();
                let ty = if ty.is_empty() {
                    ident(head).to_string()
                } else {
                    ty
                };
                if ty.is_empty() {
                    continue;
                }
                // The block's items at its top level.
                let mut level = 0;
                let mut k = open;
                while k < b.len() {
                    match b[k] {
                        b'{' => level += 1,
                        b'}' => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    if level == 1 && code[k..].starts_with("fn ") && (k == 0 || !is_ident(b[k - 1]))
                    {
                        let name = ident(&code[k + 3..]);
                        if !name.is_empty() {
                            all.push((ty.clone(), name.to_string(), i));
                        }
                    }
                    k += 1;
                }
            }
        }
        let mut out = Vec::new();
        for (ty, name, file) in &all {
            let spread = all.iter().any(|(t, _, f)| t == ty && f != file);
            let unique = all.iter().filter(|(_, n, _)| n == name).count() == 1;
            if spread && unique {
                out.push((ty.clone(), name.clone(), *file));
            }
        }
        out
    }

    /// The body of a `pub use` (any visibility) on this line, if it is one.
    fn is_reexport(line: &str) -> Option<&str> {
        let line = line.trim_start();
        let rest = line.strip_prefix("pub")?;
        let rest = match rest.strip_prefix('(') {
            Some(r) => &r[r.find(')')? + 1..],
            None => rest,
        };
        rest.trim_start().strip_prefix("use ")
    }

    /// `code` with every re-export statement (to its `;`) blanked out.
    fn without_reexports(code: &str) -> String {
        let mut out = code.as_bytes().to_vec();
        let mut at = 0;
        for line in code.split_inclusive('\n') {
            if Self::is_reexport(line).is_some() {
                let end = code[at..].find(';').map_or(code.len(), |n| at + n + 1);
                for c in &mut out[at..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
            }
            at += line.len();
        }
        String::from_utf8(out).unwrap()
    }

    /// The code's lines, a re-export that spans several joined onto one.
    fn statements(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut open: Option<String> = None;
        for line in code.lines() {
            match open.as_mut() {
                Some(s) => s.push_str(line.trim()),
                None => open = Some(line.trim().to_string()),
            }
            let s = open.as_ref().unwrap();
            if Self::is_reexport(s).is_none() || s.ends_with(';') {
                out.push(open.take().unwrap());
            }
        }
        out
    }

    /// The paths a `use` body names, relative to `me` when they start with a
    /// child module or `super`.
    fn paths_from(files: &[Vec<String>], me: &[String], body: &str) -> Vec<Vec<String>> {
        let body = body.trim();
        if let Some(rest) = body.strip_prefix("crate::") {
            return use_tree_paths(rest);
        }
        let mut base = me.to_vec();
        let mut rest = body;
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let first = ident(rest);
        let mut child = base.clone();
        child.push(first.to_string());
        if base.len() < me.len() || files.contains(&child) {
            return use_tree_paths(rest)
                .into_iter()
                .map(|p| base.iter().cloned().chain(p).collect())
                .collect();
        }
        Vec::new() // an external crate
    }

    /// The file that defines what `path` (from the crate root) names, a
    /// re-export followed at most `8 - hops` times (`usize::MAX`: never,
    /// the file the path names as written).
    fn resolve(
        &self,
        reexports: &[Vec<(String, Vec<String>)>],
        path: &[String],
        hops: usize,
    ) -> Option<usize> {
        let (n, file) = (0..=path.len())
            .rev()
            .find_map(|n| Some((n, self.files.iter().position(|f| f[..] == path[..n])?)))?;
        if hops < 8 {
            if let Some(next) = path.get(n) {
                if let Some((_, target)) = reexports[file].iter().find(|(a, _)| a == next) {
                    let mut full = target.clone();
                    full.extend_from_slice(&path[n + 1..]);
                    if let Some(j) = self.resolve(reexports, &full, hops + 1) {
                        return Some(j);
                    }
                }
            }
        }
        Some(file)
    }

    fn name(&self, i: usize) -> String {
        match self.files[i].as_slice() {
            [] => "lib.rs".to_string(),
            f => {
                let folder = src_dir().join(f.join("/"));
                if folder.is_dir() {
                    format!("{}/mod.rs", f.join("/"))
                } else {
                    format!("{}.rs", f.join("/"))
                }
            }
        }
    }

    /// The strongly connected components of more than one file (Tarjan).
    fn circles(&self) -> Vec<Vec<usize>> {
        struct Tarjan<'a> {
            g: &'a ImportGraph,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            out: Vec<Vec<usize>>,
        }
        impl Tarjan<'_> {
            fn visit(&mut self, v: usize) {
                self.index[v] = Some(self.next);
                self.low[v] = self.next;
                self.next += 1;
                self.stack.push(v);
                self.on_stack[v] = true;
                for &w in &self.g.edges[v] {
                    match self.index[w] {
                        None => {
                            self.visit(w);
                            self.low[v] = self.low[v].min(self.low[w]);
                        }
                        Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                        Some(_) => {}
                    }
                }
                if Some(self.low[v]) == self.index[v] {
                    let mut scc = Vec::new();
                    loop {
                        let w = self.stack.pop().unwrap();
                        self.on_stack[w] = false;
                        scc.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if scc.len() > 1 {
                        self.out.push(scc);
                    }
                }
            }
        }
        let n = self.files.len();
        let mut t = Tarjan {
            g: self,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        t.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
        t.out
    }
}

/// The largest set of files that import each other (directly or around a
/// circle) is the scheduler's core, at most `MAX_CIRCLE` files: a file
/// that joins it must be read with all the others to be understood.
const MAX_CIRCLE: usize = 5;

/// The circles of `g`, each as its sorted file names, largest first.
fn named_circles(g: &ImportGraph) -> Vec<Vec<String>> {
    g.circles()
        .iter()
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&i| g.name(i)).collect();
            names.sort();
            names
        })
        .collect()
}

/// Where docs/ARCHITECTURE.md holds the map this test writes.
const MAP_BEGIN: &str =
    "<!-- map: written by tests/tests/layering.rs (POOL_WRITE_MAP=1 rewrites it) -->";
const MAP_END: &str = "<!-- end of the map -->";

/// A top-level module as the map shows it: `sleep/` for a folder, `sync.rs`
/// for a file, `lib.rs` for the crate root.
fn shown_module(top: &str) -> String {
    if top == "lib" {
        "lib.rs".to_string()
    } else if src_dir().join(top).is_dir() {
        format!("{top}/")
    } else {
        format!("{top}.rs")
    }
}

/// The map of executor/src as the code has it: each floor's modules, which
/// folders of one floor import which (`floor 3`'s folders may import each
/// other), and the largest import circle with its size.
fn written_map() -> String {
    let mut out = String::from("```text\n");
    for floor in 0..FLOOR_NAMES.len() as u8 {
        let modules: Vec<String> = FLOORS
            .iter()
            .filter(|(_, f)| *f == floor)
            .map(|(m, _)| shown_module(m))
            .collect();
        writeln!(out, "floor {floor}: {}", FLOOR_NAMES[usize::from(floor)]).unwrap();
        writeln!(out, "    {}", modules.join(" ")).unwrap();
    }
    let g = ImportGraph::read(Reading::Resolved);
    let tests = {
        let root = src_dir();
        let mut files = Vec::new();
        rust_files(&root, &root, &mut files);
        test_module_files(&root, &files)
            .iter()
            .map(|f| module_path(f))
            .collect::<Vec<_>>()
    };
    let top = |i: usize| g.files[i].first().cloned().unwrap_or_else(|| "lib".into());
    let mut edges: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for (i, to) in g.edges.iter().enumerate() {
        if tests.contains(&g.files[i]) {
            continue;
        }
        for &j in to {
            let (a, b) = (top(i), top(j));
            if a != b && floor_of(&a).is_some() && floor_of(&a) == floor_of(&b) {
                edges
                    .entry(shown_module(&a))
                    .or_default()
                    .insert(shown_module(&b));
            }
        }
    }
    writeln!(out, "\nwithin a floor, who imports whom:").unwrap();
    for (from, to) in &edges {
        let to: Vec<&str> = to.iter().map(String::as_str).collect();
        writeln!(out, "    {from:<14} -> {}", to.join(" ")).unwrap();
    }
    let circles = named_circles(&g);
    let largest = circles.first().cloned().unwrap_or_default();
    writeln!(
        out,
        "\nthe largest import circle: {} files (at most {MAX_CIRCLE}), the same by every reading",
        largest.len()
    )
    .unwrap();
    for f in &largest {
        writeln!(out, "    {f}").unwrap();
    }
    let pairs: Vec<String> = circles[1..].iter().map(|c| c.join(" <-> ")).collect();
    writeln!(out, "the other circles: {}", pairs.join("; ")).unwrap();
    out.push_str("```\n");
    out
}

/// docs/ARCHITECTURE.md shows the map the code has: the floors, the
/// imports within floor 3, the circle. The test prints it; with
/// `POOL_WRITE_MAP=1` it writes it into the document.
#[test]
fn the_architecture_map_is_the_one_the_code_writes() {
    let map = written_map();
    println!("{map}");
    let path = repo_root().join("docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (doc.find(MAP_BEGIN), doc.find(MAP_END)) else {
        panic!("docs/ARCHITECTURE.md has no map between {MAP_BEGIN:?} and {MAP_END:?}");
    };
    let shown = &doc[begin + MAP_BEGIN.len()..end];
    let wanted = format!("\n{map}");
    if shown == wanted {
        return;
    }
    if std::env::var_os("POOL_WRITE_MAP").is_some() {
        let written = format!("{}{MAP_BEGIN}{wanted}{}", &doc[..begin], &doc[end..]);
        std::fs::write(&path, written).unwrap();
        return;
    }
    panic!(
        "docs/ARCHITECTURE.md's map is not the code's. The code's:\n{map}\nrerun with \
         POOL_WRITE_MAP=1 to write it there, and make the prose around it agree"
    );
}

#[test]
fn the_largest_import_circle_is_the_core_by_every_reading() {
    let mut problems = String::new();
    let mut first: Option<(Reading, Vec<Vec<String>>)> = None;
    for reading in [Reading::Resolved, Reading::Plain, Reading::ModReach] {
        let g = ImportGraph::read(reading);
        let circles = g.circles();
        let shown = named_circles(&g);
        eprintln!("import circles of executor/src, read {reading:?}: {shown:#?}");
        let largest = shown.first().map_or(0, Vec::len);
        if largest > MAX_CIRCLE {
            // Who imports whom inside the largest circle: where to cut it.
            let mut edges = String::new();
            for &i in &circles[0] {
                let mut to: Vec<String> = g.edges[i]
                    .iter()
                    .filter(|j| circles[0].contains(j))
                    .map(|&j| g.name(j))
                    .collect();
                to.sort();
                writeln!(edges, "  {} -> {}", g.name(i), to.join(", ")).unwrap();
            }
            writeln!(
                problems,
                "read {reading:?}, executor/src has a circle of {largest} files that import \
                 each other (at most {MAX_CIRCLE}): {:?}. Move what the others need into a \
                 leaf file of its own. Its imports:\n{edges}",
                shown[0]
            )
            .unwrap();
        }
        match &first {
            None => first = Some((reading, shown)),
            Some((r, c)) if *c != shown => writeln!(
                problems,
                "read {reading:?} the circles are {shown:?}, read {r:?} they are {c:?}: \
                 a reader's count must not depend on how they read (import from the \
                 defining file, not through a `mod.rs`)"
            )
            .unwrap(),
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{problems}");
}

/// Every file (models and the crate root's re-exports aside) imports what
/// it uses from the file that defines it, never through a folder's
/// `mod.rs`: so a plain reading of the `use` lines is the import graph.
#[test]
fn every_import_names_the_defining_file() {
    let g = ImportGraph::read(Reading::Resolved);
    let mut problems = String::new();
    for (i, found) in g.through_reexports.iter().enumerate() {
        for (line, path, j) in found {
            writeln!(
                problems,
                "executor/src/{}:{line}: `crate::{path}` (or its `super::` form) names a \
                 re-export: import it from `{}`, which defines it",
                g.name(i),
                g.name(*j)
            )
            .unwrap();
        }
    }
    assert!(
        problems.is_empty(),
        "imports that go through a folder's re-exports:\n{problems}"
    );
}

/// The graph's readings on a made-up crate: a name imported through a
/// `mod.rs` re-export, and a method defined in a second file of its type.
#[test]
fn the_readings_see_reexports_mod_files_and_split_methods() {
    let files = |names: &[&str]| -> Vec<Vec<String>> {
        names
            .iter()
            .map(|n| {
                n.split('/')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .collect()
    };
    // 0: a/ (mod.rs), 1: a/cells.rs, 2: b/ (mod.rs), 3: b/reg.rs, 4: b/spawn.rs, 5: b/pool.rs,
    // 6: c.rs
    let names = files(&["a", "a/cells", "b", "b/reg", "b/spawn", "b/pool", "c"]);
    let codes: Vec<String> = [
        "mod cells;\npub(crate) use cells::budget;\n",
        "use crate::b::reg::Reg;\npub(crate) fn budget(r: &Reg) {}\n",
        "mod reg;\nmod spawn;\nmod pool;\n",
        "pub(crate) struct Reg;\nimpl Reg { pub(crate) fn new() -> Reg { Reg } }\n",
        "use super::pool::Pool;\nimpl Reg { pub(crate) fn spawn_pinned(&self) {} }\n",
        "use super::reg::Reg;\npub(crate) struct Pool;\nfn f(r: &Reg) { r.spawn_pinned(); crate::a::budget(r); }\n",
        "use other::{Reg, Thing};\nfn g(r: &Reg) { r.spawn_pinned(); }\n",
    ]
    .iter()
    .map(|s| code_only(s))
    .collect();
    // `a::{self, b}` names the module `a` too, so `a::f()` after it is read.
    assert_eq!(use_tree_paths("a::{self, b};"), [vec!["a"], vec!["a", "b"]]);
    let resolved = ImportGraph::from_sources(names.clone(), &codes, Reading::Resolved);
    // pool -> spawn (the method), spawn -> pool: a circle the `use` lines alone miss.
    assert!(resolved.edges[5].contains(&4) && resolved.edges[4].contains(&5));
    // Another crate's `Reg` (imported by name): its method is not ours.
    assert!(resolved.edges[6].is_empty(), "{:?}", resolved.edges[6]);
    // pool -> cells, through the re-export; reported as such.
    assert!(resolved.edges[5].contains(&1));
    assert_eq!(
        resolved.through_reexports[5].len(),
        1,
        "{:?}",
        resolved.through_reexports
    );
    let plain = ImportGraph::from_sources(names.clone(), &codes, Reading::Plain);
    assert!(plain.edges[5].contains(&0) && plain.edges[0].contains(&1));
    assert!(!plain.edges[2].contains(&3));
    let reach = ImportGraph::from_sources(names, &codes, Reading::ModReach);
    assert!(reach.edges[2].contains(&3) && reach.edges[2].contains(&4));
}
