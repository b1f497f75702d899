//! The axum example's app: a small JSON API with shared state and a tower
//! timeout layer, the way an axum user writes one, nothing pool-specific
//! in it (`examples/axum_app.rs` serves it on pool with
//! `pool::hyper::serve`; the benchmarks serve the same `Router` on tokio
//! with `axum::serve`).
//!
//! Routes:
//!
//! * `GET /`: a greeting (text).
//! * `GET /users`: every user (JSON array); `POST /users` with
//!   `{"name": ..}`: creates one, `201` with it as JSON (`422` for a body
//!   that is not such JSON).
//! * `GET /users/{id}`: one user, or `404` with a JSON error.
//! * `GET /sleep/{ms}`: answers after `ms` milliseconds (tokio's timer:
//!   tokio-only code); past the app's timeout, `408` from tower-http's
//!   `TimeoutLayer` (tokio's timer again).
//! * `GET /whoami`: the client's address, where the server provides it
//!   (`pool::hyper::PeerAddr`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_http::timeout::TimeoutLayer;

/// A user of the API.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub id: u64,
    pub name: String,
}

/// The body of `POST /users`.
#[derive(Debug, Deserialize)]
pub struct NewUser {
    pub name: String,
}

/// The app's shared state.
#[derive(Default)]
struct Users {
    by_id: BTreeMap<u64, User>,
    next_id: u64,
}

type AppState = Arc<Mutex<Users>>;

/// The app, with its requests cut off (`408`) after `timeout`. One user,
/// `{"id": 1, "name": "ada"}`, exists from the start.
pub fn app(timeout: Duration) -> Router {
    let mut users = Users {
        next_id: 1,
        ..Users::default()
    };
    create(&mut users, "ada".to_owned());
    Router::new()
        .route("/", get(|| async { "hello from axum" }))
        .route("/users", get(list).post(add))
        .route("/users/{id}", get(one))
        .route("/sleep/{ms}", get(sleep))
        .route("/whoami", get(whoami))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .with_state(Arc::new(Mutex::new(users)))
}

fn create(users: &mut Users, name: String) -> User {
    let user = User {
        id: users.next_id,
        name,
    };
    users.next_id += 1;
    users.by_id.insert(user.id, user.clone());
    user
}

async fn list(State(state): State<AppState>) -> Json<Vec<User>> {
    Json(state.lock().unwrap().by_id.values().cloned().collect())
}

async fn add(State(state): State<AppState>, Json(new): Json<NewUser>) -> (StatusCode, Json<User>) {
    let user = create(&mut state.lock().unwrap(), new.name);
    (StatusCode::CREATED, Json(user))
}

async fn one(
    State(state): State<AppState>,
    Path(id): Path<u64>,
) -> Result<Json<User>, (StatusCode, Json<serde_json::Value>)> {
    match state.lock().unwrap().by_id.get(&id) {
        Some(user) => Ok(Json(user.clone())),
        None => Err((
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({ "error": format!("no user {id}") })),
        )),
    }
}

async fn sleep(Path(ms): Path<u64>) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

async fn whoami(peer: Option<Extension<pool::hyper::PeerAddr<SocketAddr>>>) -> String {
    match peer {
        Some(Extension(pool::hyper::PeerAddr(addr))) => addr.to_string(),
        None => "unknown".to_owned(),
    }
}
