//! The chat-completions recommendation backend against a fake endpoint on
//! 127.0.0.1: its reply is used, and every failure falls back to the
//! embedded recommender without the API key reaching the logs.

use attune_core::recommend::{EmbeddedRecommender, RecommendationInput, Recommender};
use attune_core::wire::{
    EngagementLevel, Modality, Probability, Signal, SignalType, TranscriptSegment,
};
use attune_server::logging;
use attune_server::recommend_backend::{
    RecommendationService, RecommenderConfig, RecommenderConfigError, NO_GUIDANCE,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

const KEY: &str = "sk-test-9f8e7d6c5b4a";

/// How the fake endpoint answers.
#[derive(Clone)]
enum Behaviour {
    /// This status and body.
    Reply(u16, String),
    /// The request's own `Authorization` header echoed in a 500 body.
    EchoAuthorization,
    /// Reads the request and never answers.
    Hang,
}

/// One request as the fake endpoint read it.
#[derive(Debug)]
struct Captured {
    request_line: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

impl Captured {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Starts a minimal HTTP/1.1 endpoint; returns its base URL (`.../v1`) and
/// the requests it reads.
async fn fake_backend(behaviour: Behaviour) -> (String, mpsc::UnboundedReceiver<Captured>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Bounded: no test sends more than a few requests.
        for _ in 0..8 {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let behaviour = behaviour.clone();
            let sender = sender.clone();
            tokio::spawn(async move { serve(stream, behaviour, sender).await });
        }
    });
    (base, receiver)
}

async fn serve(
    mut stream: TcpStream,
    behaviour: Behaviour,
    sender: mpsc::UnboundedSender<Captured>,
) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let captured = Captured {
        request_line,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    };
    let authorization = captured.header("authorization").unwrap_or("").to_owned();
    let _ = sender.send(captured);
    let (status, body) = match behaviour {
        Behaviour::Reply(status, body) => (status, body),
        Behaviour::EchoAuthorization => (500, format!("{{\"error\":\"bad key {authorization}\"}}")),
        Behaviour::Hang => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
    };
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
}

fn completion(text: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    })
    .to_string()
}

fn service(url: &str, timeout_ms: u64) -> RecommendationService {
    let config = RecommenderConfig {
        url: Some(url.into()),
        model: Some("coach-small".into()),
        api_key_env: Some("COACH_KEY".into()),
        timeout_ms: Some(timeout_ms),
        ..RecommenderConfig::default()
    };
    RecommendationService::from_config(&config, |name| (name == "COACH_KEY").then(|| KEY.into()))
        .unwrap()
}

struct Fixture {
    signals: Vec<Signal>,
    transcript: Vec<TranscriptSegment>,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            signals: vec![Signal {
                signal_type: SignalType::Disengagement,
                start: 10.0,
                end: 15.0,
                probability: Some(Probability::Medium),
                rationale: Some("Speech in only 24% of the window".into()),
                modality: Some(vec![Modality::Audio]),
            }],
            transcript: vec![
                TranscriptSegment {
                    start: 0.0,
                    end: 16.0,
                    text: "Our platform covers the whole pipeline".into(),
                    speaker: 0,
                },
                TranscriptSegment {
                    start: 16.0,
                    end: 18.0,
                    text: "Hmm, okay.".into(),
                    speaker: 1,
                },
            ],
        }
    }

    fn input(&self) -> RecommendationInput<'_> {
        RecommendationInput {
            instructions: "Sales call: help me listen more",
            start: 0.0,
            end: 20.0,
            signals: &self.signals,
            transcript: &self.transcript,
            engagement: Some(EngagementLevel::Neutral),
        }
    }

    fn embedded(&self) -> String {
        EmbeddedRecommender
            .recommend(&self.input())
            .expect("the fixture warrants an embedded recommendation")
    }
}

#[tokio::test]
async fn the_backend_reply_is_used_and_carries_the_prompt_and_key() {
    let (url, mut requests) = fake_backend(Behaviour::Reply(
        200,
        completion("Ask Speaker 2 which part of the pipeline hurts most."),
    ))
    .await;
    let fixture = Fixture::new();
    let text = service(&url, 3000).recommend(fixture.input()).await;
    assert_eq!(
        text.as_deref(),
        Some("Ask Speaker 2 which part of the pipeline hurts most.")
    );

    let request = requests.recv().await.expect("the backend was called");
    assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.body["model"], "coach-small");
    assert_eq!(request.body["messages"][0]["role"], "system");
    assert!(request.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains(NO_GUIDANCE));
    assert_eq!(request.body["messages"][1]["role"], "user");
    let prompt = request.body["messages"][1]["content"].as_str().unwrap();
    for expected in [
        "Sales call: help me listen more",
        "[0.0-16.0] Speaker 1: Our platform covers the whole pipeline",
        "[16.0-18.0] Speaker 2: Hmm, okay.",
        "disengagement, medium, audio: Speech in only 24% of the window",
        "Period: 0.0 s to 20.0 s",
    ] {
        assert!(
            prompt.contains(expected),
            "`{expected}` missing from:\n{prompt}"
        );
    }
}

#[tokio::test]
async fn no_guidance_from_the_backend_means_no_recommendation() {
    let (url, _requests) = fake_backend(Behaviour::Reply(200, completion(NO_GUIDANCE))).await;
    let fixture = Fixture::new();
    assert_eq!(service(&url, 3000).recommend(fixture.input()).await, None);
}

#[tokio::test]
async fn a_server_error_falls_back_to_the_embedded_recommender() {
    let (url, _requests) = fake_backend(Behaviour::Reply(500, "{\"error\":\"down\"}".into())).await;
    let fixture = Fixture::new();
    let text = service(&url, 3000).recommend(fixture.input()).await;
    assert_eq!(text, Some(fixture.embedded()));
}

#[tokio::test]
async fn a_reply_that_is_not_a_chat_completion_falls_back() {
    for body in [
        "<html>gateway</html>",
        "{\"choices\":[]}",
        &completion("   "),
    ] {
        let (url, _requests) = fake_backend(Behaviour::Reply(200, body.to_owned())).await;
        let fixture = Fixture::new();
        let text = service(&url, 3000).recommend(fixture.input()).await;
        assert_eq!(text, Some(fixture.embedded()), "{body}");
    }
}

#[tokio::test]
async fn a_backend_slower_than_the_timeout_falls_back() {
    let (url, mut requests) = fake_backend(Behaviour::Hang).await;
    let fixture = Fixture::new();
    let text = service(&url, 200).recommend(fixture.input()).await;
    assert_eq!(text, Some(fixture.embedded()));
    assert!(
        requests.recv().await.is_some(),
        "the request did reach the backend"
    );
}

#[tokio::test]
async fn an_unreachable_backend_falls_back() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let fixture = Fixture::new();
    let text = service(&format!("http://{address}/v1"), 3000)
        .recommend(fixture.input())
        .await;
    assert_eq!(text, Some(fixture.embedded()));
}

/// Log output kept in memory.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> CapturedLog {
        self.clone()
    }
}

#[tokio::test]
async fn the_api_key_never_reaches_the_logs() {
    let log = CapturedLog::default();
    // This test's runtime runs on this thread only, so a thread-local
    // subscriber sees everything the service and its client log.
    let _guard = tracing::subscriber::set_default(logging::subscriber(
        EnvFilter::new("trace"),
        log.clone(),
        false,
    ));
    let (url, _requests) = fake_backend(Behaviour::EchoAuthorization).await;
    let fixture = Fixture::new();
    let service = service(&url, 3000);
    let text = service.recommend(fixture.input()).await;
    assert_eq!(text, Some(fixture.embedded()));

    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("recommendation backend failed") && logged.contains("status 500"),
        "{logged}"
    );
    assert!(!logged.contains(KEY), "{logged}");
    assert!(!format!("{service:?}").contains(KEY));
}

#[tokio::test]
async fn without_a_url_the_embedded_recommender_answers() {
    let service =
        RecommendationService::from_config(&RecommenderConfig::default(), |_| None).unwrap();
    assert!(!service.has_backend());
    let fixture = Fixture::new();
    assert_eq!(
        service.recommend(fixture.input()).await,
        Some(fixture.embedded())
    );
}

#[test]
fn settings_are_read_from_toml_and_variables_and_checked() {
    let config: RecommenderConfig = toml::from_str(
        "url = \"https://api.example.com/v1\"\nmodel = \"gpt-4o-mini\"\napi_key_env = \"OPENAI_API_KEY\"\n",
    )
    .unwrap();
    assert!(config.validate().is_ok());
    assert_eq!(config.timeout().unwrap(), Duration::from_millis(3000));
    assert!(
        toml::from_str::<RecommenderConfig>("urll = \"x\"").is_err(),
        "typos are refused"
    );

    let mut layer = RecommenderConfig::default();
    assert!(layer.set_env("RECOMMENDER_TIMEOUT_MS", "750").unwrap());
    assert!(layer.set_env("RECOMMENDER_MODEL", "llama3").unwrap());
    assert!(!layer.set_env("BIND", "127.0.0.1:1").unwrap());
    assert!(layer.set_env("RECOMMENDER_TIMEOUT_MS", "soon").is_err());
    let merged = config.clone().overlay(layer);
    assert_eq!(merged.model.as_deref(), Some("llama3"));
    assert_eq!(merged.url, config.url);
    assert_eq!(merged.timeout().unwrap(), Duration::from_millis(750));

    let https = RecommendationService::from_config(&merged, |_| Some(KEY.into())).unwrap();
    assert!(https.has_backend(), "https URLs are supported");

    let refused = |config: RecommenderConfig| config.validate().unwrap_err();
    assert_eq!(
        refused(RecommenderConfig {
            url: Some("http://127.0.0.1:8000/v1".into()),
            ..RecommenderConfig::default()
        }),
        RecommenderConfigError::MissingModel
    );
    assert_eq!(
        refused(RecommenderConfig {
            url: Some("ftp://host/v1".into()),
            model: Some("m".into()),
            ..RecommenderConfig::default()
        }),
        RecommenderConfigError::InvalidUrl
    );
    assert_eq!(
        refused(RecommenderConfig {
            api_key: Some(KEY.into()),
            api_key_env: Some("K".into()),
            ..RecommenderConfig::default()
        }),
        RecommenderConfigError::TwoKeys
    );
    assert_eq!(
        refused(RecommenderConfig {
            timeout_ms: Some(0),
            ..RecommenderConfig::default()
        }),
        RecommenderConfigError::InvalidTimeout
    );
    let missing = RecommendationService::from_config(&config, |_| None).unwrap_err();
    assert_eq!(
        missing,
        RecommenderConfigError::MissingKeyVariable("OPENAI_API_KEY".into())
    );
    assert!(!missing.to_string().contains(KEY));
}
