//! A parallel `scope`: brighten a grayscale image (a `Vec<u8>` of 4096 x 4096
//! pixels) in place, one spawned closure per band of rows, each borrowing
//! its own `&mut` band; then a histogram of the result, one partial
//! histogram per band, summed after the scope returns.
//!
//! ```text
//! cargo run --release -p examples --example scope -- [--workers N]
//! ```

use std::time::Instant;

const WIDTH: usize = 4096;
const HEIGHT: usize = 4096;
const BAND_ROWS: usize = 64;

fn brighten(band: &mut [u8]) {
    for p in band {
        *p = p.saturating_add(40);
    }
}

fn main() -> std::io::Result<()> {
    let mut builder = pool::Builder::new();
    let mut args = std::env::args().skip(1);
    match (
        args.next().as_deref(),
        args.next().and_then(|v| v.parse().ok()),
    ) {
        (None, _) => {}
        (Some("--workers"), Some(n)) if n > 0 => builder = builder.worker_threads(n),
        _ => {
            eprintln!("usage: scope [--workers N] (a positive integer)");
            std::process::exit(2);
        }
    }
    let pool = builder.build()?;

    // A gradient with some noise: the same image every run.
    let mut image: Vec<u8> = (0..WIDTH * HEIGHT)
        .map(|i| ((i % WIDTH) / 16 + (i * 2_654_435_761) % 7) as u8)
        .collect();
    let mut expected = image.clone();
    brighten(&mut expected);

    let t = Instant::now();
    let bands = image.len() / (WIDTH * BAND_ROWS);
    let mut histograms = vec![[0u64; 256]; bands];
    pool.scope(|s| {
        let rows = image.chunks_mut(WIDTH * BAND_ROWS);
        for (band, histogram) in rows.zip(histograms.iter_mut()) {
            s.spawn(move |_| {
                brighten(band);
                for &p in band.iter() {
                    histogram[p as usize] += 1;
                }
            });
        }
    });
    let mut histogram = [0u64; 256];
    for h in &histograms {
        for (total, n) in histogram.iter_mut().zip(h) {
            *total += n;
        }
    }
    let elapsed = t.elapsed();

    assert_eq!(image, expected, "a band was not brightened exactly once");
    assert_eq!(histogram.iter().sum::<u64>(), (WIDTH * HEIGHT) as u64);
    let brightest = histogram.iter().rposition(|&n| n > 0).unwrap_or(0);
    println!(
        "brightened {WIDTH}x{HEIGHT} pixels in {bands} bands on {} workers in {:.1} ms; \
         brightest value {brightest}",
        pool.worker_threads(),
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}
