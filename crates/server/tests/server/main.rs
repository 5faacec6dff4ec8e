//! Integration tests: a real server on 127.0.0.1:0, spoken to over HTTP.

mod common;
mod http;
mod keys;
mod logs;
mod shutdown;
