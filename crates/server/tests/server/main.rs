//! Integration tests: a real server on 127.0.0.1:0, spoken to over HTTP.

mod analysis;
mod asyncapi;
mod common;
mod conformance;
mod demo;
mod early_refusals;
mod faults;
mod hostile;
mod http;
mod jobs;
mod keys;
mod limits;
mod logs;
mod matrix;
mod metrics;
mod multi_instance;
mod openapi;
#[path = "../support/pg.rs"]
mod pg;
mod realtime;
mod report;
mod restart;
mod scopes;
mod shutdown;
mod slow;
mod streams;
mod tokens;
mod uploads;
mod ws;
