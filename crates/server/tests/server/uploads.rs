//! The upload forms: what reaches the runner, every form error, media errors
//! raised at validation, the v1 result, and the 32 MB limit enforced while
//! the body streams in.

use crate::common::{
    client, expect_error, json, post_form, submit, url, Form, Harness, HANG_GUARD,
};
use attune_core::wire::{Dimension, IncludeFlag, Model};
use attune_core::{ErrorCode, ServiceError};
use attune_server::{Scope, UploadRoute};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn the_v2_form_reaches_the_runner_checked() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let form = Form::new()
        .text("include[]", "conversation_quality_timeline")
        .file("file", b"\x00\x01media bytes\r\n--not-a-boundary")
        .text("model", "inter-2-audio")
        .text("wait_seconds", "0")
        .text("include[]", "signals")
        .text("unrelated", "ignored");
    assert_eq!(
        post_form(&server, "/v2/upload/analyze", &key, form)
            .await
            .status(),
        202
    );
    let seen = harness.runner.seen();
    let request = seen.last().unwrap();
    assert_eq!(request.route, UploadRoute::V2);
    assert_eq!(request.model, Model::Inter2Audio);
    assert_eq!(
        request.include,
        vec![
            IncludeFlag::ConversationQualityTimeline,
            IncludeFlag::Signals
        ]
    );
    assert_eq!(
        &request.file.bytes[..],
        b"\x00\x01media bytes\r\n--not-a-boundary"
    );
    assert_eq!(request.file.file_name.as_deref(), Some("conversation.mp4"));
    server.shutdown().await;
}

#[tokio::test]
async fn every_v2_form_error_has_its_code() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;

    let no_file = post_form(
        &server,
        "/v2/upload/analyze",
        &key,
        Form::new().text("model", "inter-2"),
    )
    .await;
    expect_error(no_file, 400, ErrorCode::Ih4001).await;
    let misnamed = post_form(
        &server,
        "/v2/upload/analyze",
        &key,
        Form::new().text("model", "inter-2").file("video", b"media"),
    )
    .await;
    expect_error(misnamed, 400, ErrorCode::Ih4001).await;
    let not_multipart = client()
        .post(url(&server, "/v2/upload/analyze"))
        .bearer_auth(&key)
        .header("content-type", "video/mp4")
        .body(vec![0u8; 100])
        .send()
        .await
        .unwrap();
    let body = expect_error(not_multipart, 400, ErrorCode::Ih4001).await;
    assert!(body.message.unwrap().contains("multipart/form-data"));

    let missing_model = post_form(&server, "/v2/upload/analyze", &key, Form::new().media(10)).await;
    expect_error(missing_model, 400, ErrorCode::Ih4005).await;
    expect_error(
        submit(&server, &key, "inter-9", &[]).await,
        400,
        ErrorCode::Ih4005,
    )
    .await;
    let deep = expect_error(
        submit(&server, &key, "inter-2-deep", &[]).await,
        400,
        ErrorCode::Ih4020,
    )
    .await;
    let message = deep.message.unwrap();
    assert!(message.contains("`inter-2`, `inter-2-audio`"), "{message}");
    for wait in ["-1", "121", "2.5", "soon"] {
        expect_error(
            submit(&server, &key, "inter-2", &[("wait_seconds", wait)]).await,
            400,
            ErrorCode::Ih4005,
        )
        .await;
    }
    let unknown_flag = expect_error(
        submit(&server, &key, "inter-2", &[("include[]", "emotions")]).await,
        400,
        ErrorCode::Ih4005,
    )
    .await;
    assert!(unknown_flag.message.unwrap().contains("emotions"));
    let malformed = client()
        .post(url(&server, "/v2/upload/analyze"))
        .bearer_auth(&key)
        .header("content-type", "multipart/form-data; boundary=xyz")
        .body("--xyz\r\nthis is no part header\r\n\r\n")
        .send()
        .await
        .unwrap();
    expect_error(malformed, 400, ErrorCode::Ih4005).await;
    assert!(
        harness.runner.seen().is_empty(),
        "nothing reached the runner"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn media_refused_at_validation_answers_with_the_catalog_status() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    for (code, status) in [
        (ErrorCode::Ih4002, 400),
        (ErrorCode::Ih4004, 400),
        (ErrorCode::Ih4007, 400),
        (ErrorCode::Ih5001, 422),
        (ErrorCode::Ih5002, 422),
        (ErrorCode::Ih5008, 422),
        (ErrorCode::Ih1003, 503),
    ] {
        harness.runner.set(|script| {
            script.validate_error = Some(ServiceError::with_message(code, format!("probe: {code}")))
        });
        let v2 = expect_error(submit(&server, &key, "inter-2", &[]).await, status, code).await;
        assert_eq!(v2.message.unwrap(), format!("probe: {code}"));
        let v1 = post_form(&server, "/v1/upload/analyze", &key, Form::new().media(10)).await;
        expect_error(v1, status, code).await;
    }
    server.shutdown().await;
}

#[tokio::test]
async fn v1_answers_the_analysis_result_with_feedback_when_asked() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &[Scope::Upload]).await;
    let server = harness.start().await;

    let plain = post_form(&server, "/v1/upload/analyze", &key, Form::new().media(10)).await;
    assert_eq!(plain.status(), 200);
    let result = json(plain).await;
    assert_eq!(result["signals"][0]["type"], "interest");
    assert_eq!(
        result["signals"][0]["modality"],
        serde_json::json!(["video"])
    );
    assert_eq!(result["engagement_state"][0]["state"], "engaged");
    assert_eq!(result["engagement_state"][0]["end"], 12.0);
    assert!(result.get("conversation_quality").is_none(), "{result}");
    assert_eq!(result["feedback"]["type"], "no_feedback");
    assert!(result["feedback"]["reason"].is_string());

    let form = Form::new()
        .text("goal_dimensions[]", "rapport")
        .text("goal_dimensions[]", "clarity")
        .text("conversation_context", "a sales call")
        .text("include[]", "conversation_quality_overall")
        .media(10);
    let response = post_form(&server, "/v1/upload/analyze", &key, form).await;
    assert_eq!(response.status(), 200);
    let result = json(response).await;
    assert_eq!(result["feedback"]["type"], "feedback");
    assert_eq!(
        result["feedback"]["active_dimensions"],
        serde_json::json!(["rapport", "clarity"])
    );
    assert_eq!(result["feedback"]["primary_signal"], "interest");
    assert!(result["conversation_quality"]["overall"]["quality_index"].is_number());
    assert!(result["conversation_quality"].get("timeline").is_none());
    let request = harness.runner.seen().pop().unwrap();
    assert_eq!(request.route, UploadRoute::V1);
    assert_eq!(
        request.goal_dimensions,
        vec![Dimension::Rapport, Dimension::Clarity]
    );
    assert_eq!(
        request.conversation_context.as_deref(),
        Some("a sales call")
    );

    let signals = post_form(
        &server,
        "/v1/upload/analyze",
        &key,
        Form::new().text("include[]", "signals").media(10),
    )
    .await;
    expect_error(signals, 400, ErrorCode::Ih4005).await;
    let goal = post_form(
        &server,
        "/v1/upload/analyze",
        &key,
        Form::new().text("goal_dimensions[]", "charisma").media(10),
    )
    .await;
    expect_error(goal, 400, ErrorCode::Ih4005).await;
    let no_file = post_form(&server, "/v1/upload/analyze", &key, Form::new()).await;
    expect_error(no_file, 400, ErrorCode::Ih4001).await;

    harness
        .runner
        .set(|script| script.run_error = Some(ErrorCode::Ih5002.into()));
    let failed = post_form(&server, "/v1/upload/analyze", &key, Form::new().media(10)).await;
    expect_error(failed, 422, ErrorCode::Ih5002).await;
    server.shutdown().await;
}

/// The limit plus one byte, as a file.
const TOO_LARGE: usize = 33_554_432 + 1;

#[tokio::test]
async fn an_upload_just_over_32_mb_answers_413() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let exact = Form::new().text("model", "inter-2").media(33_554_432);
    assert_eq!(
        post_form(&server, "/v2/upload/analyze", &key, exact)
            .await
            .status(),
        202
    );
    let over = Form::new().text("model", "inter-2").media(TOO_LARGE);
    let body = expect_error(
        post_form(&server, "/v2/upload/analyze", &key, over).await,
        413,
        ErrorCode::Ih4003,
    )
    .await;
    assert!(body.message.unwrap().contains("33554432 bytes"));
    let v1 = post_form(
        &server,
        "/v1/upload/analyze",
        &key,
        Form::new().media(TOO_LARGE),
    )
    .await;
    expect_error(v1, 413, ErrorCode::Ih4003).await;
    server.shutdown().await;
}

/// Reads one HTTP response (head and `Content-Length` body) from `stream`.
async fn read_response(stream: &mut TcpStream) -> (String, String) {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "closed before the response head");
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a content-length");
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "closed before the response body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned();
    (head, body)
}

fn request_head(key: &str, form: &Form, framing: &str) -> Vec<u8> {
    format!(
        "POST /v2/upload/analyze HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: {}\r\n{framing}\r\n",
        form.content_type()
    )
    .into_bytes()
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
    framed.extend_from_slice(data);
    framed.extend_from_slice(b"\r\n");
    framed
}

#[tokio::test]
async fn a_streamed_40_mb_upload_is_cut_at_32_mb_and_answered_before_it_ends() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let form = Form::new().text("model", "inter-2");
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    // Chunked: the server cannot know the size in advance and must count.
    stream
        .write_all(&request_head(&key, &form, "Transfer-Encoding: chunked\r\n"))
        .await
        .unwrap();
    let mut opening = form.open_body();
    opening.extend_from_slice(&form.file_head("file"));
    stream.write_all(&chunk(&opening)).await.unwrap();
    // Send 33 MiB of the announced 40 MiB file, then stop and wait: a server
    // that buffered the whole body before answering would never answer.
    let piece = vec![0x42u8; 1024 * 1024];
    for _ in 0..33 {
        stream.write_all(&chunk(&piece)).await.unwrap();
    }
    let (head, body) = tokio::time::timeout(HANG_GUARD, read_response(&mut stream))
        .await
        .expect("no answer while the upload was still open");
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(body.contains("\"error_id\":\"ih4003\""), "{body}");
    assert!(harness.runner.seen().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn an_announced_oversized_upload_is_refused_before_its_body() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let form = Form::new();
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let length = format!("Content-Length: {}\r\n", 40 * 1024 * 1024);
    stream
        .write_all(&request_head(&key, &form, &length))
        .await
        .unwrap();
    let (head, body) = tokio::time::timeout(HANG_GUARD, read_response(&mut stream))
        .await
        .expect("no answer before the body");
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(body.contains("\"error_id\":\"ih4003\""), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_bad_model_before_the_file_is_refused_without_reading_the_file() {
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let audio_only = harness
        .key("acme", &[Scope::Upload, Scope::UploadInter2Audio])
        .await;
    let server = harness.start().await;
    for (credential, model, code) in [
        (&key, "inter-2-deep", "ih4020"),
        (&key, "inter-7", "ih4005"),
        (&audio_only, "inter-2", "ih2003"),
    ] {
        let form = Form::new().text("model", model);
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        let length = format!("Content-Length: {}\r\n", 30 * 1024 * 1024);
        stream
            .write_all(&request_head(credential, &form, &length))
            .await
            .unwrap();
        let mut opening = form.open_body();
        opening.extend_from_slice(&form.file_head("file"));
        stream.write_all(&opening).await.unwrap();
        // The file never comes; the answer does.
        let (head, body) = tokio::time::timeout(HANG_GUARD, read_response(&mut stream))
            .await
            .expect("no answer before the file");
        assert!(head.contains(" 40"), "{head}");
        assert!(body.contains(code), "{body}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_sends_its_whole_body_before_reading_still_gets_the_answer() {
    // The server answers at the `model` field, then keeps draining the rest
    // for a while instead of resetting the connection under the client.
    let harness = Harness::new().await;
    let key = harness.key("acme", &Scope::ALL).await;
    let server = harness.start().await;
    let form = Form::new().text("model", "inter-2-deep");
    let file = vec![0x42u8; 8 * 1024 * 1024];
    let mut body = form.open_body();
    body.extend_from_slice(&form.file_head("file"));
    body.extend_from_slice(&file);
    body.extend_from_slice(b"\r\n");
    let body = form.clone().into_body_after(body);
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let length = format!("Content-Length: {}\r\n", body.len());
    stream
        .write_all(&request_head(&key, &form, &length))
        .await
        .unwrap();
    tokio::time::timeout(HANG_GUARD, stream.write_all(&body))
        .await
        .unwrap()
        .expect("the server kept reading");
    let (head, body) = tokio::time::timeout(HANG_GUARD, read_response(&mut stream))
        .await
        .unwrap();
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert!(body.contains("ih4020"), "{body}");
    server.shutdown().await;
}
