//! The page shell: one HTML document with its CSS inline, built from sections.
//! Callers escape text with [`t`]; everything else here is markup.

/// Escapes text for HTML content and attributes.
pub fn t(s: &str) -> String {
    html_escape::encode_double_quoted_attribute(s).into_owned()
}

/// A table; `cells` are markup (escape text with [`t`]).
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in headers {
        out += &format!("<th>{}</th>", t(h));
    }
    out += "</tr></thead><tbody>";
    for row in rows {
        out += "<tr>";
        for c in row {
            out += &format!("<td>{c}</td>");
        }
        out += "</tr>";
    }
    out + "</tbody></table>"
}

/// Big-number cards: `(label, value)`.
pub fn cards(items: &[(&str, String)]) -> String {
    let mut out = String::from(r#"<div class="cards">"#);
    for (k, v) in items {
        out += &format!(r#"<div class="card"><div class="v">{}</div><div class="k">{}</div></div>"#, t(v), t(k));
    }
    out + "</div>"
}

/// A collapsed block of preformatted text.
pub fn details(summary: &str, text: &str) -> String {
    format!("<details><summary>{}</summary><pre>{}</pre></details>", t(summary), t(text))
}

/// A note in muted text.
pub fn note(text: &str) -> String {
    format!(r#"<p class="note">{}</p>"#, t(text))
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;background:#f6f7f9}\
main{max-width:1120px;margin:0 auto;padding:24px}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;\
border-bottom:1px solid #dde1e7;padding-bottom:4px}.sub{color:#5b6475;margin:0 0 12px}.note{color:#5b6475}\
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 14px;min-width:110px}\
.card .v{font-size:19px;font-weight:600}.card .k{color:#5b6475;font-size:12px}\
table{border-collapse:collapse;background:#fff;margin:6px 0}th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:left;vertical-align:top}\
th{background:#eef1f5;font-weight:600}pre{background:#fff;border:1px solid #dde1e7;padding:8px;overflow:auto;max-height:320px}\
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{background:#fff;border:1px solid #dde1e7;border-radius:6px;width:500px;max-width:100%}\
.plot .ptitle{font-weight:600;font-size:13px}.plot text{font-size:11px;fill:#1d2330}.plot .ytick{text-anchor:end}.plot .xtick,.plot .xlabel,.plot .ylabel{text-anchor:middle}\
.plot .grid{stroke:#eceff3}.plot .axis{stroke:#8a93a3}.plot .line{stroke-width:2}\
.strip{display:flex;gap:4px;align-items:center;margin:4px 0}.strip img{width:72px;height:72px;object-fit:contain;image-rendering:pixelated;background:#000}\
.strip .cap{width:230px;font-size:12px;color:#394150}.clips{display:flex;flex-wrap:wrap;gap:14px}\
figure{margin:0;background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:8px}figure video{width:256px;height:256px;object-fit:contain;\
image-rendering:pixelated;background:#000;display:block}figcaption{font-size:12px;color:#394150;max-width:256px;margin-top:4px}\
.tag{display:inline-block;border-radius:3px;padding:0 5px;font-size:11px;background:#e4ecf8;color:#214a86}.tag.no{background:#eee;color:#555}\
.warn{background:#fff4e5;border:1px solid #f0c98b;padding:8px 12px;border-radius:6px}";

/// The document: a title, a subtitle and sections of markup.
pub struct Page {
    body: String,
    toc: Vec<(String, String)>,
    head: String,
}

impl Page {
    pub fn new(title: &str, subtitle: &str) -> Page {
        Page { body: String::new(), toc: vec![], head: format!(r#"<h1>{}</h1><p class="sub">{}</p>"#, t(title), t(subtitle)) }
    }

    /// Adds a section with an anchor `id`.
    pub fn section(&mut self, id: &str, title: &str, markup: &str) {
        self.toc.push((id.into(), title.into()));
        self.body += &format!(r#"<section id="{}"><h2>{}</h2>{markup}</section>"#, t(id), t(title));
    }

    pub fn finish(self) -> String {
        let toc: Vec<String> = self.toc.iter().map(|(id, title)| format!(r##"<a href="#{}">{}</a>"##, t(id), t(title))).collect();
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
             <title>rollway report</title><style>{STYLE}</style></head><body><main>{}<p class=\"sub\">{}</p>{}</main></body></html>\n",
            self.head,
            toc.join(" · "),
            self.body
        )
    }
}
