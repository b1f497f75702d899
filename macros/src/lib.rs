//! `#[pool::main]` and `#[pool::test]`: run an `async fn` on a fresh
//! [`pool`](https://docs.rs/pool) pool.
//!
//! Use them through the `pool` crate (`#[pool::main]`), not from here: the
//! expansion names the runtime as `::pool::...`.
//!
//! # Invariants
//!
//! * Every error points at the token to change and says what to change.
//! * When only the attribute's arguments are wrong, the function is still
//!   expanded (with the default configuration) next to the error, so that
//!   errors in its body keep their own spans and an IDE keeps working.
//! * The expansion names everything by absolute path and triggers no lint.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

/// The arguments the attributes accept, for error messages.
const KNOWN_ARGUMENTS: &str =
    "`worker_threads`, `thread_name`, `start_paused`, `seed`, `seeds`, `network`";

/// Turns `async fn main()` into a `fn main()` that runs its body on a new
/// `pool::Pool` (`worker_threads = N` workers, or the default; threads
/// named `thread_name = "NAME"`, as `Builder::thread_name`) with
/// `block_on`. A `main` that returns a value (`Result<(), E>` included)
/// returns it, so `?` works in the body.
///
/// ```
/// #[pool::main(worker_threads = 4, thread_name = "app")]
/// async fn main() -> std::io::Result<()> {
///     let n = pool::spawn(async { 6 * 7 }).await.unwrap();
///     println!("{n}");
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Main, args.into(), item.into()).into()
}

/// Turns an `async fn` into a `#[test]` that runs its body on a fresh
/// `pool::Pool` (`worker_threads = N` workers, or the default), so tests do
/// not share state through the global pool. Other attributes
/// (`#[should_panic]`, `#[ignore]`, doc comments) are kept.
/// `start_paused = true` starts the pool with its clock paused
/// (`Builder::start_paused`): sleeps and timeouts take no real time, on
/// any number of workers (also for `#[pool::main]`).
/// `seed = N` runs it on a seeded pool (`Builder::seed`): its workers are
/// logical workers on the test's thread, interleaved the same way for the
/// same seed, on a paused clock; `POOL_SEED=N` replaces the seed, and a
/// failing run prints the line that replays it. `seeds = K` (or
/// `POOL_SEEDS=K` in the environment) runs the test on the K seeds from
/// `seed` on, each on a fresh pool, until one fails: a sweep for a race
/// (`POOL_SEED`, when set, runs its one seed). `network` beside `seed`
/// gives the seeded pool a simulated network (`Builder::network` with
/// `pool::sim::Network::new()`): its `pool::net` sockets are endpoints on
/// simulated hosts, and the body is on host 127.0.1.1.
///
/// ```
/// #[pool::test(worker_threads = 2)]
/// async fn adds() {
///     assert_eq!(pool::spawn(async { 1 + 1 }).await.unwrap(), 2);
/// }
///
/// #[pool::test(start_paused = true, worker_threads = 4)]
/// async fn an_hour_at_once() {
///     let start = pool::time::Instant::now();
///     pool::time::sleep(std::time::Duration::from_secs(3600)).await;
///     assert_eq!(start.elapsed().as_secs(), 3600);
/// }
///
/// #[pool::test(seed = 42, worker_threads = 4)]
/// async fn the_same_schedule_every_run() {
///     let a = pool::spawn(async { 1 });
///     let b = pool::spawn(async { 2 });
///     assert_eq!(a.await.unwrap() + b.await.unwrap(), 3);
/// }
///
/// #[pool::test(seed = 7, network)]
/// async fn a_simulated_connection() {
///     let listener = pool::net::TcpListener::bind("0.0.0.0:80").await.unwrap();
///     let client = pool::net::TcpStream::connect("127.0.1.1:80").await.unwrap();
///     let (_, peer) = listener.accept().await.unwrap();
///     assert_eq!(peer, client.local_addr().unwrap());
/// }
/// # fn main() {}
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Test, args.into(), item.into()).into()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

impl Kind {
    fn attribute(self) -> &'static str {
        match self {
            Kind::Main => "#[pool::main]",
            Kind::Test => "#[pool::test]",
        }
    }
}

/// What the arguments asked for, each with the span of its name.
#[derive(Default)]
struct Config {
    worker_threads: Option<(usize, Span)>,
    thread_name: Option<(String, Span)>,
    start_paused: Option<(bool, Span)>,
    seed: Option<(u64, Span)>,
    seeds: Option<(u64, Span)>,
    /// `network`: a simulated network in the seeded pool (`pool::sim`).
    network: Option<Span>,
}

fn expand(kind: Kind, args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let input: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            // Not a function at all: say so, and give the item back as is.
            let e = syn::Error::new(
                e.span(),
                format!("{} goes on an `async fn`", kind.attribute()),
            );
            return with_errors(item, vec![e]);
        }
    };

    if input.sig.asyncness.is_none() {
        let e = syn::Error::new_spanned(
            input.sig.fn_token,
            format!(
                "the `async` keyword is missing from the function declaration: \
                 {} runs an `async fn`; write `async fn {}`",
                kind.attribute(),
                input.sig.ident
            ),
        );
        return with_errors(input.into_token_stream(), vec![e]);
    }

    let mut errors = Vec::new();
    let mut config = parse_args(args, &mut errors);
    if let (Kind::Main, Some((_, span))) = (kind, &config.seeds) {
        errors.push(syn::Error::new(
            *span,
            "`seeds` sweeps the seeds of a #[pool::test]; a #[pool::main] runs one seed: remove `seeds`",
        ));
        config.seeds = None;
    }
    errors.extend(check_signature(kind, &input));
    let mut input = input;
    if kind == Kind::Test {
        // Reported by `check_signature`; dropped so rustc adds no warning.
        input.attrs.retain(|a| !a.path().is_ident("test"));
    }
    let expanded = expand_fn(kind, input, &config);
    with_errors(expanded, errors)
}

fn with_errors(mut tokens: TokenStream2, errors: Vec<syn::Error>) -> TokenStream2 {
    for e in errors {
        tokens.extend(e.into_compile_error());
    }
    tokens
}

fn parse_args(args: TokenStream2, errors: &mut Vec<syn::Error>) -> Config {
    let mut config = Config::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(m) => m,
        Err(e) => {
            errors.push(syn::Error::new(
                e.span(),
                format!("{e}; the arguments look like `worker_threads = 4`"),
            ));
            return config;
        }
    };
    for meta in metas {
        let name = meta
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_else(|| meta.path().to_token_stream().to_string());
        if name == "network" {
            // A flag: the pool gets `pool::sim::Network::new()`.
            if !matches!(meta, Meta::Path(_)) {
                errors.push(syn::Error::new_spanned(
                    &meta,
                    "`network` takes no value: write `network` beside `seed = N` for a \
                     simulated network with pool::sim::Network::new()'s settings",
                ));
            } else if let Some(first) = config.network {
                let mut e = syn::Error::new_spanned(
                    meta.path(),
                    "`network` is given twice; remove one of them",
                );
                e.combine(syn::Error::new(first, "first given here"));
                errors.push(e);
            } else {
                config.network = Some(meta.path().span());
            }
            continue;
        }
        let example = match name.as_str() {
            "worker_threads" => "`worker_threads = 4`",
            "thread_name" => "`thread_name = \"app\"`",
            "start_paused" => "`start_paused = true`",
            "seed" => "`seed = 42`",
            "seeds" => "`seeds = 500`",
            _ => {
                errors.push(syn::Error::new_spanned(
                    meta.path(),
                    format!(
                        "unknown argument `{name}`; the known arguments are: {KNOWN_ARGUMENTS}"
                    ),
                ));
                continue;
            }
        };
        let value = match &meta {
            Meta::NameValue(nv) => &nv.value,
            _ => {
                errors.push(syn::Error::new_spanned(
                    &meta,
                    format!("`{name}` needs a value, like {example}"),
                ));
                continue;
            }
        };
        let first = match name.as_str() {
            "worker_threads" => config.worker_threads.as_ref().map(|(_, s)| *s),
            "start_paused" => config.start_paused.as_ref().map(|(_, s)| *s),
            "seed" => config.seed.as_ref().map(|(_, s)| *s),
            "seeds" => config.seeds.as_ref().map(|(_, s)| *s),
            _ => config.thread_name.as_ref().map(|(_, s)| *s),
        };
        if let Some(first) = first {
            let mut e = syn::Error::new_spanned(
                meta.path(),
                format!("`{name}` is given twice; remove one of them"),
            );
            e.combine(syn::Error::new(first, "first given here"));
            errors.push(e);
            continue;
        }
        let span = meta.path().span();
        let parsed = match name.as_str() {
            "worker_threads" => {
                parse_worker_threads(value).map(|n| config.worker_threads = Some((n, span)))
            }
            "start_paused" => {
                parse_start_paused(value).map(|b| config.start_paused = Some((b, span)))
            }
            "seed" => parse_seed(value).map(|n| config.seed = Some((n, span))),
            "seeds" => parse_seeds(value).map(|n| config.seeds = Some((n, span))),
            _ => parse_thread_name(value).map(|s| config.thread_name = Some((s, span))),
        };
        if let Err(e) = parsed {
            errors.push(e);
        }
    }
    if let (Some((_, span)), None) = (&config.seeds, &config.seed) {
        errors.push(syn::Error::new(
            *span,
            "`seeds` needs `seed = N` beside it, the first seed of the sweep, like `seed = 0, seeds = 500`",
        ));
        config.seeds = None;
    }
    if let (Some(span), None) = (config.network, &config.seed) {
        errors.push(syn::Error::new(
            span,
            "`network` simulates a network inside a seeded pool: add `seed = N` beside it, \
             like `seed = 7, network`",
        ));
        config.network = None;
    }
    config
}

/// `start_paused`: `true` or `false`.
fn parse_start_paused(value: &Expr) -> Result<bool, syn::Error> {
    match value {
        Expr::Lit(ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Ok(b.value),
        _ => Err(syn::Error::new_spanned(
            value,
            "`start_paused` takes `true` or `false`, like `start_paused = true`",
        )),
    }
}

/// An integer literal that parses as `N`, and the literal; else the error
/// `message` at `value`.
fn parse_int<'a, N>(value: &'a Expr, message: &str) -> Result<(N, &'a syn::LitInt), syn::Error>
where
    N: std::str::FromStr,
    N::Err: std::fmt::Display,
{
    let parsed = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse::<N>().ok().map(|n| (n, int)),
        _ => None,
    };
    parsed.ok_or_else(|| syn::Error::new_spanned(value, message))
}

/// `seed`: an integer literal that fits a `u64`.
fn parse_seed(value: &Expr) -> Result<u64, syn::Error> {
    let message = format!(
        "`seed` takes an integer literal between 0 and {}, like `seed = 42`",
        u64::MAX
    );
    parse_int(value, &message).map(|(n, _)| n)
}

/// `seeds`: how many seeds a sweep runs, a positive integer literal.
fn parse_seeds(value: &Expr) -> Result<u64, syn::Error> {
    let message =
        "`seeds` takes a positive integer literal, the number of seeds to run, like `seeds = 500`";
    match parse_int(value, message)? {
        (0, _) => Err(syn::Error::new_spanned(value, message)),
        (n, _) => Ok(n),
    }
}

/// A thread name: a non-empty string literal with no NUL byte (what
/// `Builder::thread_name` would refuse at run time is refused here).
fn parse_thread_name(value: &Expr) -> Result<String, syn::Error> {
    let Expr::Lit(ExprLit {
        lit: Lit::Str(s), ..
    }) = value
    else {
        return Err(syn::Error::new_spanned(
            value,
            "`thread_name` takes a string literal, like `thread_name = \"app\"`",
        ));
    };
    let name = s.value();
    if name.is_empty() || name.contains('\0') {
        return Err(syn::Error::new_spanned(
            s,
            "`thread_name` must be a non-empty name without NUL bytes, like `thread_name = \"app\"`",
        ));
    }
    Ok(name)
}

fn parse_worker_threads(value: &Expr) -> Result<usize, syn::Error> {
    let message = "`worker_threads` takes a positive integer literal, like `worker_threads = 4`";
    match parse_int(value, message)? {
        (0, int) => Err(syn::Error::new_spanned(
            int,
            "`worker_threads` must be at least 1: a pool needs a worker to run tasks",
        )),
        (n, _) => Ok(n),
    }
}

fn check_signature(kind: Kind, input: &ItemFn) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    let sig = &input.sig;
    if !sig.inputs.is_empty() {
        let names: Vec<String> = sig
            .inputs
            .iter()
            .map(|arg| match arg {
                syn::FnArg::Typed(t) => match &*t.pat {
                    syn::Pat::Ident(p) => format!("`{}`", p.ident),
                    _ => "a pattern parameter".to_string(),
                },
                syn::FnArg::Receiver(_) => "`self`".to_string(),
            })
            .collect();
        let hint = match kind {
            Kind::Main if sig.ident == "main" => {
                "; read command-line arguments with `std::env::args()`"
            }
            _ => "",
        };
        errors.push(syn::Error::new_spanned(
            &sig.inputs,
            format!(
                "{} takes a fn with no parameters: remove {} from `{}`{hint}",
                kind.attribute(),
                names.join(", "),
                sig.ident
            ),
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!("{} takes a fn without generic parameters", kind.attribute()),
        ));
    }
    if kind == Kind::Test {
        if let Some(attr) = input.attrs.iter().find(|a| a.path().is_ident("test")) {
            errors.push(syn::Error::new_spanned(
                attr,
                "remove this `#[test]`: #[pool::test] already makes the fn a test",
            ));
        }
    }
    errors
}

fn expand_fn(kind: Kind, mut input: ItemFn, config: &Config) -> TokenStream2 {
    input.sig.asyncness = None;
    let block = &input.block;
    let workers = match config.worker_threads {
        Some((n, span)) => quote_spanned!(span=> ::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let name = match &config.thread_name {
        Some((name, span)) => quote_spanned!(*span=> ::core::option::Option::Some(#name)),
        None => quote!(::core::option::Option::None),
    };
    let paused = config.start_paused.is_some_and(|(b, _)| b);
    let seed = match config.seed {
        Some((n, span)) => quote_spanned!(span=> ::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let attribute = kind.attribute();
    let network = config.network.is_some();
    if let (Kind::Test, Some((first, _))) = (kind, config.seed) {
        // A seeded test: the body runs once per seed of its sweep, each on
        // a fresh pool (`__private::run_seeds`).
        let seeds = match config.seeds {
            Some((n, span)) => quote_spanned!(span=> ::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        let run = quote_spanned! {block.span()=>
            ::pool::__private::run_seeds(
                #workers, #name, #first, #seeds, #network, #attribute,
                |pool: &::pool::Pool| pool.block_on(async #block),
            )
        };
        let body: syn::Block = syn::parse_quote! {{ #run }};
        *input.block = body;
        return quote! {
            #[::core::prelude::v1::test]
            #input
        };
    }
    // The call spans the body's braces, so a mismatch between the body's
    // value and the declared return type points at the user's body.
    let run = quote_spanned! {block.span()=>
        ::pool::__private::pool_for_macro(#workers, #name, #paused, #seed, #network, #attribute)
            .block_on(body)
    };
    let body: syn::Block = syn::parse_quote! {{
        let body = async #block;
        #run
    }};
    *input.block = body;
    let test_attr = match kind {
        Kind::Test => quote!(#[::core::prelude::v1::test]),
        Kind::Main => quote!(),
    };
    quote! {
        #test_attr
        #input
    }
}
