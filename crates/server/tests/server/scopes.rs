//! The scope matrix: each scope set, on a key and on a client token, against
//! each HTTP route and each model.

use crate::common::{
    client, error_body, get_job, mint, mint_token, post_form, submit, url, Form, Harness,
};
use attune_core::ErrorCode;
use attune_server::Scope;
use serde_json::json;

const NO_JOB: &str = "00000000000000000000000000000000";

/// The scope sets tried: none, each alone, each upload model with the upload
/// scope, and all.
fn scope_sets() -> Vec<Vec<Scope>> {
    let mut sets = vec![vec![]];
    sets.extend(Scope::ALL.iter().map(|scope| vec![*scope]));
    sets.push(vec![Scope::Upload, Scope::UploadInter2]);
    sets.push(vec![Scope::Upload, Scope::UploadInter2Audio]);
    sets.push(Scope::ALL.to_vec());
    sets
}

/// Asserts `response` is `allowed_status` when `allowed`, else 403 `ih2003`.
async fn check(response: reqwest::Response, allowed: bool, allowed_status: u16, what: &str) {
    let status = response.status().as_u16();
    if allowed {
        assert_eq!(status, allowed_status, "{what}");
    } else {
        assert_eq!(status, 403, "{what}");
        assert_eq!(
            error_body(response).await.error_id,
            ErrorCode::Ih2003,
            "{what}"
        );
    }
}

/// Every upload route and model with `credential` holding `scopes`.
async fn check_upload_routes(
    server: &attune_server::ServerHandle,
    credential: &str,
    scopes: &[Scope],
    kind: &str,
) {
    let has = |scope: Scope| scopes.contains(&scope);
    let what = |route: &str| format!("{kind} with {scopes:?} on {route}");

    let v1 = post_form(
        server,
        "/v1/upload/analyze",
        credential,
        Form::new().media(10),
    )
    .await;
    check(v1, has(Scope::Upload), 200, &what("v1 upload")).await;
    for (model, scope) in [
        ("inter-2", Scope::UploadInter2),
        ("inter-2-audio", Scope::UploadInter2Audio),
    ] {
        let v2 = submit(server, credential, model, &[]).await;
        check(v2, has(Scope::Upload) && has(scope), 202, &what(model)).await;
    }
    // The reserved model is refused as such once the route's scope is held.
    let deep = submit(server, credential, "inter-2-deep", &[]).await;
    if has(Scope::Upload) {
        assert_eq!(deep.status(), 400, "{}", what("inter-2-deep"));
        assert_eq!(error_body(deep).await.error_id, ErrorCode::Ih4020);
    } else {
        check(deep, false, 0, &what("inter-2-deep")).await;
    }
    check(
        get_job(server, credential, NO_JOB).await,
        has(Scope::Upload),
        404,
        &what("job read"),
    )
    .await;
}

#[tokio::test]
async fn each_scope_set_opens_exactly_its_routes_and_models() {
    let harness = Harness::new().await;
    let server = harness.start().await;
    let all = harness.key("acme", &Scope::ALL).await;
    for scopes in scope_sets() {
        let key = harness.key("acme", &scopes).await;
        check_upload_routes(&server, &key, &scopes, "key").await;
        // A key grants tokens only scopes it holds.
        for requested in Scope::ALL {
            let response = mint(&server, &key, json!({"scopes": [requested.as_str()]})).await;
            check(
                response,
                scopes.contains(&requested),
                200,
                &format!("key with {scopes:?} minting {requested}"),
            )
            .await;
        }
        if !scopes.is_empty() {
            let names: Vec<_> = scopes.iter().map(|s| s.as_str()).collect();
            let token = mint_token(&server, &all, json!({"scopes": names})).await;
            check_upload_routes(&server, &token, &scopes, "token").await;
        }
    }
    // Revoking needs no scope: any key of an account may revoke its tokens.
    let bare = harness.key("globex", &[]).await;
    let revoke = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&bare)
        .header("content-type", "application/json")
        .body(json!({"token": format!("att_{}", "0".repeat(64))}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status(), 200);
    server.shutdown().await;
}
