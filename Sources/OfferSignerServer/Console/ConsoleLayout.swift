import Foundation
import HTTPTypes

/// The console's page frame, its stylesheet and small shared pieces (numbers, dates, tables).
enum ConsoleLayout {
    /// The pages in the navigation bar: path and title.
    static let navigation: [(path: String, title: String)] = [
        ("/console", "Overview"), ("/console/offers", "Offers"), ("/console/experiments", "Experiments"),
        ("/console/policy", "Policy"), ("/console/customers", "Customer"), ("/console/keys", "Keys"),
    ]

    /// A signed-in page: the navigation, the sign-out form (with the session's CSRF token) and `body`.
    static func page(_ title: String, session: ConsoleSession, current: String, body: HTML) -> HTML {
        let links: [HTML] = navigation.map { item in
            item.path == current ? "<a href=\"\(item.path)\" aria-current=\"page\">\(item.title)</a>" : "<a href=\"\(item.path)\">\(item.title)</a>"
        }
        return frame(title, body: """
            <header><nav>\(links)</nav>
            <form class="signout" method="post" action="/console/logout">\(csrfField(session))<span>\(session.admin)</span> <button type="submit">Sign out</button></form></header>
            <main><h1>\(title)</h1>
            \(body)
            </main>
            """)
    }

    /// The document around a page's content.
    static func frame(_ title: String, body: HTML) -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · OfferSigner console</title>
        <link rel="stylesheet" href="/console/style.css">
        <link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
        </head><body>
        \(body)
        </body></html>
        """
    }

    /// The hidden CSRF field every form of a session carries.
    static func csrfField(_ session: ConsoleSession) -> HTML {
        "<input type=\"hidden\" name=\"\(ConsoleSessions.csrfField)\" value=\"\(session.csrfToken)\">"
    }

    /// An error, as a page of its own (the message is the API's, which never holds a secret).
    static func errorPage(_ error: APIError) -> HTML {
        frame("Error", body: """
            <main><h1>\(error.status.code) \(error.status.reasonPhrase)</h1>
            <p class="error">\(error.message)</p>
            <p><a href="/console">Back to the console</a></p></main>
            """)
    }

    /// A table with a header row.
    static func table(_ headers: [String], _ rows: [[HTML]], numericFrom: Int = Int.max) -> HTML {
        let head: [HTML] = headers.enumerated().map { index, header in index >= numericFrom ? "<th class=\"n\">\(header)</th>" : "<th>\(header)</th>" }
        let body: [HTML] = rows.map { row in
            let cells: [HTML] = row.enumerated().map { index, cell in index >= numericFrom ? "<td class=\"n\">\(cell)</td>" : "<td>\(cell)</td>" }
            return "<tr>\(cells)</tr>"
        }
        return "<div class=\"scroll\"><table><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table></div>"
    }

    /// A cell's text.
    static func cell(_ value: some CustomStringConvertible) -> HTML { "\(value)" }

    /// `0.1234` as `12.3 %`.
    static func percent(_ value: Double) -> String {
        value.isFinite ? String(format: "%.1f %%", value * 100) : "–"
    }

    /// A date as `2026-11-25 14:03 UTC`.
    static func date(_ date: Date) -> String {
        date.formatted(.iso8601).prefix(16).replacingOccurrences(of: "T", with: " ") + " UTC"
    }

    /// Revenue in thousandths, as `12.34 USD`.
    static func money(_ milliunits: Int64, _ currency: String) -> String {
        String(format: "%.2f", Double(milliunits) / 1000) + " " + currency
    }

    /// The icon served at `/console/favicon.svg` (so that browsers do not ask the service for `/favicon.ico`).
    static let icon = ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0a84ff"/><path d="M4 8.5l2.5 2.5L12 5" stroke="#fff" stroke-width="2" fill="none"/></svg>"##

    /// The stylesheet served at `/console/style.css`: readable at a phone's width, no external resource.
    static let stylesheet = """
        :root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fff; --muted: #6e6e73; --line: #d2d2d7; --issued: #0a84ff; --redeemed: #30a14e; --bad: #c9252c; }
        @media (prefers-color-scheme: dark) { :root { --fg: #f5f5f7; --bg: #1c1c1e; --muted: #a1a1a6; --line: #3a3a3c; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 -apple-system, system-ui, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
        nav { display: flex; flex-wrap: wrap; gap: .25rem .9rem; }
        nav a { color: inherit; text-decoration: none; padding: .2rem 0; }
        nav a[aria-current=page] { font-weight: 600; border-bottom: 2px solid var(--issued); }
        main { max-width: 1100px; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.4rem; margin: .3rem 0 1rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: .7rem; }
        .card { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; }
        .card b { display: block; font-size: 1.4rem; } .card span { color: var(--muted); font-size: .85rem; }
        .scroll { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; font-size: .9rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
        th.n, td.n { text-align: right; font-variant-numeric: tabular-nums; }
        .ok { color: var(--redeemed); } .bad, .error { color: var(--bad); } .muted, .note { color: var(--muted); }
        form.signout { display: flex; gap: .5rem; align-items: center; margin: 0; }
        form.stack { display: grid; gap: .5rem; max-width: 420px; }
        form.inline { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .2rem 0; }
        form.wide { max-width: none; margin-top: 1.2rem; } textarea { width: 100%; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); font: .85rem/1.4 ui-monospace, Menlo, monospace; }
        pre { overflow-x: auto; font-size: .8rem; padding: .6rem; border: 1px solid var(--line); border-radius: 6px; }
        h3 { font-size: 1rem; margin: 1.2rem 0 .5rem; } details { margin: .8rem 0; } summary { cursor: pointer; }
        input, select, button { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
        button { cursor: pointer; } button.danger { border-color: var(--bad); color: var(--bad); }
        svg.chart { width: 100%; height: auto; max-height: 320px; }
        svg .issued { fill: var(--issued); } svg .redeemed { fill: var(--redeemed); }
        svg .axis { stroke: var(--line); } svg text { fill: var(--muted); font-size: 16px; }
        svg .interval { stroke: var(--issued); stroke-width: 2; } svg .estimate { fill: var(--issued); } svg .zero { stroke: var(--muted); stroke-dasharray: 3 3; }
        .legend span { margin-right: 1rem; } .legend .issued::before, .legend .redeemed::before { content: ""; display: inline-block; width: .8em; height: .8em; margin-right: .3em; }
        .legend .issued::before { background: var(--issued); } .legend .redeemed::before { background: var(--redeemed); }
        """
}
