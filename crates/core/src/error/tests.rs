use super::*;
use std::collections::HashSet;

/// Every code the interface lists, copied from its Errors table.
const SPEC_CODES: &[&str] = &[
    "ih1001", "ih1002", "ih1003", "ih1004", "ih2001", "ih2002", "ih2003", "ih2013", "ih2014",
    "ih3001", "ih3002", "ih3003", "ih3004", "ih3005", "ih3006", "ih4001", "ih4002", "ih4003",
    "ih4004", "ih4005", "ih4006", "ih4007", "ih4020", "ih4021", "ih5001", "ih5002", "ih5003",
    "ih5004", "ih5005", "ih5006", "ih5007", "ih5008", "ih6001", "ih6002", "ih6003", "ih6004",
    "ih6005", "ih6006", "ih6007", "ih6008", "ih6009", "ih6010",
];

#[test]
fn catalog_holds_every_spec_code_once_and_nothing_else() {
    let in_catalog: Vec<&str> = CATALOG.iter().map(|row| row.code.as_str()).collect();
    let unique: HashSet<&str> = in_catalog.iter().copied().collect();
    assert_eq!(unique.len(), in_catalog.len(), "duplicate code in catalog");
    for code in SPEC_CODES {
        assert!(unique.contains(code), "{code} missing from catalog");
    }
    assert_eq!(
        in_catalog.len(),
        SPEC_CODES.len(),
        "catalog has codes the spec lacks"
    );
}

#[test]
fn rows_are_indexed_by_their_code() {
    for (i, code) in ErrorCode::ALL.iter().enumerate() {
        assert_eq!(code.info().code, *code);
        assert_eq!(CATALOG[i].code, *code);
        assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
    }
    assert_eq!(ErrorCode::parse("ih9999"), None);
}

#[test]
fn http_statuses_follow_the_spec_tables() {
    let expected: &[(&str, u16)] = &[
        ("ih1002", 503),
        ("ih1003", 503),
        ("ih2001", 401),
        ("ih2002", 401),
        ("ih2003", 403),
        ("ih3002", 429),
        ("ih3003", 429),
        ("ih3006", 429),
        ("ih4001", 400),
        ("ih4002", 400),
        ("ih4003", 413),
        ("ih4004", 400),
        ("ih4005", 400),
        ("ih4007", 400),
        ("ih4020", 400),
        ("ih4021", 404),
        ("ih5001", 422),
        ("ih5002", 422),
        ("ih5008", 422),
    ];
    for (code, status) in expected {
        let info = ErrorCode::parse(code).unwrap().info();
        assert_eq!(info.http_status, Some(*status), "{code}");
    }
}

#[test]
fn close_codes_follow_the_spec() {
    let expected: &[(&str, u16)] = &[("ih2003", 4003), ("ih4005", 1008), ("ih1003", 1013)];
    for (code, close) in expected {
        let info = ErrorCode::parse(code).unwrap().info();
        assert_eq!(info.close_code, Some(*close), "{code}");
    }
    // Every fatal code can actually close a session, and every close code is
    // one a WebSocket endpoint may send (1000-1014 standard, 4000-4999 private).
    for row in CATALOG {
        if row.is_fatal() {
            assert!(
                row.close_code.is_some(),
                "{} is fatal without a close code",
                row.code
            );
        }
        if let Some(close) = row.close_code {
            assert!(
                (1000..=1014).contains(&close) || (4000..=4999).contains(&close),
                "{} has close code {close}",
                row.code
            );
        }
    }
}

#[test]
fn session_severities_follow_the_spec() {
    use ErrorCode::*;
    for code in [Ih6001, Ih6003, Ih6004, Ih6005, Ih6008, Ih6010] {
        assert_eq!(code.info().severity, Severity::Fatal, "{code}");
    }
    for code in [Ih6002, Ih6006, Ih6007, Ih6009, Ih5001, Ih5004, Ih5006] {
        assert_eq!(code.info().severity, Severity::NonFatal, "{code}");
    }
    for code in [Ih4001, Ih4003, Ih4021, Ih1004] {
        assert_eq!(code.info().severity, Severity::HttpOnly, "{code}");
        assert_eq!(code.info().close_code, None, "{code}");
    }
}

fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

#[test]
fn anchors_are_code_and_slug_of_meaning() {
    for row in CATALOG {
        let expected = format!("{}-{}", row.code.as_str(), slug(row.meaning));
        assert_eq!(row.anchor, expected);
        assert!(!row.default_message.is_empty());
    }
    assert_eq!(
        ErrorCode::Ih6002.link("https://docs.example.com/"),
        "https://docs.example.com/api-reference/error-handling#ih6002-message-too-large"
    );
}

#[test]
fn service_error_becomes_the_spec_error_body() {
    let err = ServiceError::with_message(
        ErrorCode::Ih4020,
        "model inter-2-deep is not available; use inter-2 or inter-2-audio",
    );
    let body = err.to_response("corr-1", "https://docs.example.com");
    let json = serde_json::to_value(&body).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "error_id": "ih4020",
            "correlation_id": "corr-1",
            "link": "https://docs.example.com/api-reference/error-handling#ih4020-model-not-available-on-route",
            "message": "model inter-2-deep is not available; use inter-2 or inter-2-audio",
        })
    );
    assert_eq!(
        ServiceError::new(ErrorCode::Ih4001).message(),
        ErrorCode::Ih4001.info().default_message
    );
}
