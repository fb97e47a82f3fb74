import Foundation
import HTTPTypes
import OfferApplication

/// The console's page frame, its stylesheet and small shared pieces (numbers, dates, tables).
enum ConsoleLayout {
    /// The pages in the navigation bar: path and title.
    static let navigation: [(path: String, title: String)] = [
        ("/console", "Overview"), ("/console/offers", "Offers"), ("/console/experiments", "Experiments"),
        ("/console/policy", "Policy"), ("/console/retention", "Retention"), ("/console/customers", "Customer"),
        ("/console/keys", "Keys"),
    ]

    /// A signed-in page: the navigation, the sign-out form (with the session's CSRF token) and `body`.
    static func page(_ title: String, session: ConsoleSession, current: String, body: HTML) -> HTML {
        let links: [HTML] = navigation.map { item in
            item.path == current ? "<a href=\"\(item.path)\" aria-current=\"page\">\(item.title)</a>" : "<a href=\"\(item.path)\">\(item.title)</a>"
        }
        return frame(
            title,
            body: """
                <header><nav>\(links)</nav>
                <form class="signout" method="post" action="/console/logout">\(csrfField(session))<span>\(session.admin)</span> <button \
                type="submit">Sign out</button></form></header>
                <main><h1>\(title)</h1>
                \(body)
                </main>
                """
        )
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
        frame(
            "Error",
            body: """
                <main><h1>\(error.status.code) \(error.status.reasonPhrase)</h1>
                <p class="error">\(error.message)</p>
                <p><a href="/console">Back to the console</a></p></main>
                """
        )
    }

    /// A table with a header row, in a box that scrolls sideways when the table is wider than the screen (its edges
    /// then shadowed, and a "scroll →" hint shown at a phone's width, where cells do not wrap and the first column stays
    /// in view; wider, text cells wrap so that the table fits). Columns from `numericFrom` on are numbers.
    static func table(_ headers: [String], _ rows: [[HTML]], numericFrom: Int = Int.max) -> HTML {
        table(headers, rows, numeric: numericFrom < headers.count ? numericFrom..<headers.count : 0..<0)
    }

    /// A table whose columns in `numeric` are numbers (right-aligned).
    static func table(_ headers: [String], _ rows: [[HTML]], numeric: Range<Int>) -> HTML {
        let head: [HTML] = headers.enumerated().map { index, header in
            numeric.contains(index) ? "<th class=\"n\">\(header)</th>" : "<th>\(header)</th>"
        }
        let body: [HTML] = rows.map { row in
            let cells: [HTML] = row.enumerated().map { index, cell in numeric.contains(index) ? "<td class=\"n\">\(cell)</td>" : "<td>\(cell)</td>" }
            return "<tr>\(cells)</tr>"
        }
        // A table of three columns or more may be wider than a phone: its box says it scrolls.
        return "<div class=\"scroll\(headers.count >= 3 ? " wide" : "")\"><table><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table></div>"
    }

    /// The one name of a channel on every page: `app` for what the app asks through `/v1/offers/*` (the issued log's
    /// `api`, the decision log's `legacy`, `jws` and `introductory`), `retention` for the App Store's real-time request.
    static func channelName(_ raw: String) -> String {
        switch raw {
        case "api", "app", "legacy", "jws", "introductory": "app"
        default: raw
        }
    }

    /// ``channelName(_:)`` for a cell, with the request's kind when the raw name says more (`app · JWS`).
    static func channel(_ raw: String) -> HTML {
        let kind: String? =
            switch raw {
            case "legacy": "legacy signature"
            case "jws": "JWS"
            case "introductory": "introductory"
            default: nil
            }
        return kind.map { "\(channelName(raw)) <span class=\"muted\">· \($0)</span>" } ?? "\(channelName(raw))"
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
    static let icon =
        ##"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0a84ff"/><path \##
        d="M4 8.5l2.5 2.5L12 5" stroke="#fff" stroke-width="2" fill="none"/></svg>
        """##

    /// The stylesheet served at `/console/style.css`: readable at a phone's width, no external resource.
    static let stylesheet = """
        :root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fff; --muted: #6e6e73; --line: #d2d2d7; --issued: #0a84ff; --redeemed: #30a14e; \
        --bad: #c9252c; --shade: rgba(0,0,0,.22); }
        @media (prefers-color-scheme: dark) { :root { --fg: #f5f5f7; --bg: #1c1c1e; --muted: #a1a1a6; --line: #3a3a3c; --shade: \
        rgba(255,255,255,.25); } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 -apple-system, system-ui, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; justify-content: space-between; padding: .6rem 1rem; \
        border-bottom: 1px solid var(--line); }
        nav { display: flex; flex-wrap: wrap; gap: .25rem .9rem; }
        nav a { color: inherit; text-decoration: none; padding: .2rem 0; }
        nav a[aria-current=page] { font-weight: 600; border-bottom: 2px solid var(--issued); }
        main { max-width: 1600px; margin: 0 auto; padding: 1rem 1.25rem; }
        h1 { font-size: 1.4rem; margin: .3rem 0 1rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: .7rem; }
        .card { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; }
        .card b { display: block; font-size: 1.4rem; } .card span { color: var(--muted); font-size: .85rem; }
        .scroll { overflow-x: auto; background: linear-gradient(to right, var(--bg) 30%, transparent), linear-gradient(to left, var(--bg) 30%, \
        transparent) 100% 0,
          radial-gradient(farthest-side at 0 50%, var(--shade), transparent), radial-gradient(farthest-side at 100% 50%, var(--shade), transparent) \
        100% 0;
          background-repeat: no-repeat; background-size: 40px 100%, 40px 100%, 14px 100%, 14px 100%; background-attachment: local, local, scroll, \
        scroll; }
        .scroll::before { content: "scroll →"; display: none; position: sticky; left: 0; font-size: .75rem; color: var(--muted); }
        @media (max-width: 700px) { .scroll.wide::before { display: block; } .scroll td:first-child, .scroll th:first-child { position: sticky; \
        left: 0; background: var(--bg); } }
        table { border-collapse: collapse; width: 100%; font-size: .9rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
        @media (min-width: 701px) { td, th { white-space: normal; } td.n, th.n, td code { white-space: nowrap; } }
        .status { border: 1px solid var(--line); border-left: 4px solid var(--redeemed); border-radius: 6px; padding: .5rem .8rem; margin: 0 0 1rem; }
        .status.warn { border-left-color: #d08a00; } .status.bad { border-left-color: var(--bad); }
        ul.warnings { margin: .4rem 0 0; padding-left: 1.2rem; } ul.warnings li { margin: .2rem 0; } ul.warnings li.bad::marker { color: var(--bad); }
        span.reason { display: block; } span.reason code { font-size: .8rem; color: var(--muted); }
        form.range a { margin-right: .4rem; } form.range a[aria-current] { font-weight: 600; }
        svg .change { stroke: #d08a00; stroke-width: 2; stroke-dasharray: 4 3; } svg .change-label { fill: #d08a00; font-size: 13px; }
        th.n, td.n { text-align: right; font-variant-numeric: tabular-nums; }
        .ok { color: var(--redeemed); } .bad, .error { color: var(--bad); } .muted, .note { color: var(--muted); }
        form.signout { display: flex; gap: .5rem; align-items: center; margin: 0; }
        form.stack { display: grid; gap: .5rem; max-width: 420px; }
        form.inline { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .2rem 0; }
        form.wide { max-width: none; margin-top: 1.2rem; } textarea { width: 100%; padding: .35rem .5rem; border: 1px solid var(--line); \
        border-radius: 6px; background: var(--bg); color: var(--fg); font: .85rem/1.4 ui-monospace, Menlo, monospace; }
        pre { overflow-x: auto; font-size: .8rem; padding: .6rem; border: 1px solid var(--line); border-radius: 6px; }
        pre.diff .add { background: rgba(48,161,78,.2); } pre.diff .del { background: rgba(201,37,44,.2); } pre.diff .gap { color: var(--muted); }
        h3 { font-size: 1rem; margin: 1.2rem 0 .5rem; } details { margin: .8rem 0; } summary { cursor: pointer; }
        input, select, button { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); \
        color: var(--fg); }
        button { cursor: pointer; } button.danger { border-color: var(--bad); color: var(--bad); }
        svg.chart { width: 100%; height: auto; max-height: 320px; }
        svg .issued { fill: var(--issued); } svg .redeemed { fill: var(--redeemed); }
        svg .axis { stroke: var(--line); } svg text { fill: var(--muted); font-size: 16px; }
        svg .interval { stroke: var(--issued); stroke-width: 2; } svg .estimate { fill: var(--issued); } svg .zero { stroke: var(--muted); \
        stroke-dasharray: 3 3; }
        .legend span { margin-right: 1rem; } .legend .issued::before, .legend .redeemed::before { content: ""; display: inline-block; width: .8em; \
        height: .8em; margin-right: .3em; }
        .legend .issued::before { background: var(--issued); } .legend .redeemed::before { background: var(--redeemed); }
        """
}
