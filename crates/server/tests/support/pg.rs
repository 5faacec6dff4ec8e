//! PostgreSQL helpers shared by the store contract suite and the server tests.

/// Creates an empty database beside the admin URL's and answers its URL.
pub async fn fresh_database(admin_url: &str) -> String {
    let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls)
        .await
        .expect("the test cluster answers");
    tokio::spawn(connection);
    let name = format!("attune_test_{}", attune_server::ids::new_job_id());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    // The admin URL is `postgres://user@host:port/db[?query]`: swap the db.
    let (base, query) = admin_url
        .split_once('?')
        .map_or((admin_url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base.rsplit_once('/').expect("the URL names a database");
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}
