//! The reference service: the stack a tokio user deploys, written the way
//! an axum user writes it, with nothing pool-specific in it. The same
//! `Router` is served on pool (`pool::hyper::serve`, or tokio's
//! `axum::serve` inside a pool) and on tokio (`axum::serve`) by
//! `examples/reference_service.rs`; its tests are
//! `examples/tests/reference_service.rs` and its bench is
//! `benches/src/bin/reference.rs`.
//!
//! Layers (outermost first): tower-http's `TraceLayer`, `CompressionLayer`
//! (gzip, when the client accepts it) and `TimeoutLayer` (`408` after the
//! timeout, on tokio's timer).
//!
//! Routes:
//!
//! * `GET /json`: a small JSON object.
//! * `GET /static/blob.txt`: a 64 KiB file, from tower-http's `ServeDir`
//!   (tokio::fs: its reads run on tokio's blocking threads).
//! * `GET /users/{id}`: one row of a SQLite database (sqlx, one query per
//!   request), as JSON; `404` with a JSON error if there is no such user.
//! * `GET /proxy`: the body of a `reqwest` GET of the upstream URL (another
//!   local server: the bench runs one; by default the service's own
//!   `/json`).
//! * `GET /ws`: a WebSocket that echoes every text and binary message.
//! * `GET /sleep/{ms}`: answers after `ms` milliseconds (tokio's timer),
//!   or `408` past the timeout.

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::path::{Path as FsPath, PathBuf};
use std::time::Duration;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// Rows in the `users` table: ids 1 to `USERS`.
pub const USERS: i64 = 100;
/// The size of `static/blob.txt`.
pub const BLOB_BYTES: usize = 64 * 1024;
/// Requests are cut off (`408`) after this long.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// A row of the `users` table.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub name: String,
}

/// The service's shared state.
#[derive(Clone)]
struct App {
    db: SqlitePool,
    http: reqwest::Client,
    upstream: String,
}

/// Where the service keeps its files: `users.db` and `static/blob.txt`.
#[derive(Clone, Debug)]
pub struct Files {
    pub dir: PathBuf,
}

impl Files {
    /// Create the directory, the 64 KiB static file and the database with
    /// its `USERS` rows (from scratch: an old database is replaced).
    pub async fn create(dir: &FsPath) -> Result<Files, Box<dyn std::error::Error>> {
        std::fs::create_dir_all(dir.join("static"))?;
        let line = b"The quick brown fox jumps over the lazy dog; pack my box with jugs.\n";
        let blob: Vec<u8> = line.iter().copied().cycle().take(BLOB_BYTES).collect();
        std::fs::write(dir.join("static").join("blob.txt"), blob)?;
        let db_path = dir.join("users.db");
        let _ = std::fs::remove_file(&db_path);
        let db = connect(&db_path, true).await?;
        sqlx::query("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            .execute(&db)
            .await?;
        for id in 1..=USERS {
            sqlx::query("INSERT INTO users (id, name) VALUES (?, ?)")
                .bind(id)
                .bind(format!("user-{id}"))
                .execute(&db)
                .await?;
        }
        db.close().await;
        Ok(Files {
            dir: dir.to_owned(),
        })
    }
}

async fn connect(path: &FsPath, create: bool) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(create)
        .read_only(!create);
    SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
}

/// The service over `files`, proxying `/proxy` to `upstream` (a full URL).
/// Must be called inside the runtime that will serve it (sqlx's pool and
/// reqwest's client are built here).
pub async fn router(files: &Files, upstream: String) -> Result<Router, sqlx::Error> {
    let app = App {
        db: connect(&files.dir.join("users.db"), false).await?,
        http: reqwest::Client::new(),
        upstream,
    };
    Ok(Router::new()
        .route("/json", get(json))
        .route("/users/{id}", get(user))
        .route("/proxy", get(proxy))
        .route("/ws", get(ws))
        .route("/sleep/{ms}", get(sleep))
        .nest_service("/static", ServeDir::new(files.dir.join("static")))
        .with_state(app)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            TIMEOUT,
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http()))
}

#[derive(Serialize)]
struct Hello {
    message: &'static str,
    users: i64,
}

async fn json() -> Json<Hello> {
    Json(Hello {
        message: "hello from the reference service",
        users: USERS,
    })
}

async fn user(State(app): State<App>, Path(id): Path<i64>) -> Response {
    let row = sqlx::query_as::<_, (i64, String)>("SELECT id, name FROM users WHERE id = ?")
        .bind(id)
        .fetch_optional(&app.db)
        .await;
    match row {
        Ok(Some((id, name))) => Json(User { id, name }).into_response(),
        Ok(None) => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({ "error": format!("no user {id}") })),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn proxy(State(app): State<App>) -> Response {
    let reply = async {
        let reply = app.http.get(&app.upstream).send().await?;
        let status = reply.status();
        Ok::<_, reqwest::Error>((status, reply.bytes().await?))
    };
    match reply.await {
        Ok((status, body)) => (status, body).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

async fn ws(upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(echo)
}

async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        let reply = match message {
            Message::Text(_) | Message::Binary(_) => message,
            // The reply to a close, and to a ping, is sent by the next
            // `recv` (which then ends the loop, after a close).
            Message::Close(_) | Message::Ping(_) | Message::Pong(_) => continue,
        };
        if socket.send(reply).await.is_err() {
            return;
        }
    }
}

async fn sleep(Path(ms): Path<u64>) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}
