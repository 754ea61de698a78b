//! Prints what headless Chromium's WebGPU says about its adapter (`GPUAdapterInfo`), main
//! thread and worker alike: `cargo run -p tokscope-e2e --example adapter_info`.

#[tokio::main]
async fn main() {
    let b = tokscope_e2e::browser::Browser::launch(true, 800, 600).await.unwrap();
    // WebGPU needs a secure context: a page from localhost, not about:blank.
    let server = tokscope_e2e::server::start(std::path::Path::new("dist"), "127.0.0.1:0").unwrap();
    b.client.goto(&server.url("index.html")).await.unwrap();
    let js = "const done = arguments[0];
      navigator.gpu.requestAdapter().then(a => done(a ? JSON.stringify({vendor: a.info.vendor,
        architecture: a.info.architecture, device: a.info.device, description: a.info.description,
        fallback: a.info.isFallbackAdapter}) : 'no adapter'), e => done(String(e)));";
    let v = b.client.execute_async(js, vec![]).await.unwrap();
    println!("{v}");
    b.close().await;
}
