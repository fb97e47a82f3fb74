import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel

/// `/console`: the operators' web console (docs/console.md), served beside the admin API on the operations
/// listener (or the single port), never on the public one. Sign-in with an admin token through a form, then a
/// session cookie; every page is server-rendered HTML with SVG charts, and every form carries a CSRF token.
struct ConsoleRoutes {
    /// The use cases the console shares with the admin API.
    let useCases: OfferSignerUseCases
    let adminTokens: BearerTokens
    /// The admin API's limiter of failed authentications (per client address), shared with it.
    let failures: any LimitBuckets
    let sessions: ConsoleSessions

    func register(on router: Router<OfferSignerRequestContext>) {
        let console = router.group("/console").add(middleware: ConsoleHeadersMiddleware())
        console.get("/style.css") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: ConsoleLayout.stylesheet))
            )
        }
        console.get("/favicon.svg") { _, _ in
            Response(status: .ok, headers: [.contentType: "image/svg+xml"], body: .init(byteBuffer: ByteBuffer(string: ConsoleLayout.icon)))
        }
        console.get("/login") { request, context in
            if let cookieValue = ConsoleSessions.cookieValue(in: request), try await sessions.session(cookieValue) != nil {
                return Response(status: .seeOther, headers: [.location: "/console"])
            }
            return Self.loginPage(message: nil).response()
        }
        console.post("/login") { request, context in try await signIn(request, context: context) }

        let signedIn = console.group().add(middleware: ConsoleSessionMiddleware(sessions: sessions))
        signedIn.post("/logout") { request, context in
            if let cookieValue = ConsoleSessions.cookieValue(in: request) { try await sessions.end(cookieValue) }
            context.logger.notice("console sign-out", metadata: ["admin": "\(context.adminName ?? "-")"])
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/console/login", .setCookie: ConsoleSessions.setCookie(nil, secure: ConsoleSessions.isSecure(request)),
                ]
            )
        }
        _ = RequestTally.startedAt  // the overview's uptime counts from here: the router's start
        let pages = ConsolePages(useCases: useCases, adminTokens: adminTokens)
        signedIn.get("") { request, context in
            let range = try ConsoleRange(query: try ConsoleForm(encoded: request.uri.query ?? ""))
            return try await pages.overview(try context.requireConsoleSession, range: range).response()
        }
        signedIn.get("/offers") { request, context in
            let query = try ConsoleForm(encoded: request.uri.query ?? "")
            let range = try ConsoleRange(query: query)
            return try await pages.offers(try context.requireConsoleSession, range: range, page: try ConsolePages.offersPage(query)).response()
        }
        signedIn.get("/offers.csv") { request, context in
            let range = try ConsoleRange(query: try ConsoleForm(encoded: request.uri.query ?? ""))
            _ = try context.requireConsoleSession
            let name = "offers-\(ConsoleRange.day(range.from))-\(ConsoleRange.day(range.to)).csv"
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"\(name)\"",
                ],
                body: .init(byteBuffer: ByteBuffer(string: try await pages.offersCSV(range: range)))
            )
        }
        signedIn.get("/experiments") { _, context in try await pages.experiments(try context.requireConsoleSession).response() }
        signedIn.get("/retention") { _, context in try await pages.retention(try context.requireConsoleSession).response() }
        signedIn.get("/experiments/{id}") { _, context in
            let identifier = try context.parameters.require("id")
            guard (1...64).contains(identifier.utf8.count) else {
                throw APIError.invalidRequest(field: "id", "An experiment's id is 1 to 64 characters.")
            }
            return try await pages.experiment(identifier, session: try context.requireConsoleSession).response()
        }
        signedIn.get("/customers") { request, context in
            // The query as a GET form sends it (`+` for a space), each field bounded.
            try await pages.customer(try ConsoleForm(encoded: request.uri.query ?? ""), session: try context.requireConsoleSession).response()
        }
        signedIn.get("/policy") { request, context in
            // `?start=in-force`: the form's candidate starts as the policy in force's text.
            let start = try ConsoleForm(encoded: request.uri.query ?? "")["start"] == "in-force"
            return pages.policy(try context.requireConsoleSession, candidate: start ? pages.useCases.signing.policy?.text ?? "" : "").response()
        }
        signedIn.post("/policy") { request, context in
            var request = request
            let form = try await ConsoleForm.body(of: &request)
            return try await pages.dryRun(form, session: try context.requireConsoleSession, logger: context.logger)
        }
        signedIn.get("/keys") { _, context in try await pages.keys(try context.requireConsoleSession, message: nil).response() }
        signedIn.post("/keys") { request, context in
            var request = request
            let form = try await ConsoleForm.body(of: &request)
            return try await pages.changeKey(form, session: try context.requireConsoleSession, logger: context.logger)
        }
    }

    /// Checks the token of the sign-in form; on success a session and its cookie, then 303 to the overview. A
    /// wrong token is 403 with the form again, and counts against the client's address as a failed admin
    /// authentication does (429 once over the limit); so does a body that cannot be read as the form (malformed,
    /// too large), which is then answered 400 or 413. The token is never logged, echoed or put in a URL.
    private func signIn(_ request: Request, context: OfferSignerRequestContext) async throws -> Response {
        var request = request
        let client = context.remoteAddress?.ipAddress ?? "unknown"
        let form: ConsoleForm
        do {
            form = try await ConsoleForm.body(of: &request)
        } catch {
            // Counted first: an unreadable body is a failed sign-in, throttled like a wrong token.
            try await throttle(client: client, context: context, failure: "console sign-in failed: the form could not be read")
            throw error
        }
        let token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty, token.utf8.count <= 512, let admin = adminTokens.admin(presenting: token) else {
            try await throttle(client: client, context: context, failure: "console sign-in failed")
            let message =
                adminTokens.isEmpty
                ? "The console is disabled: no \(ConfigurationVariable.adminTokens.environmentName) are configured."
                : "That is not an admin token."
            return Self.loginPage(message: message).response(status: .forbidden)
        }
        let (cookieValue, _) = try await sessions.start(admin: admin)  // audited as console.signin
        var context = context
        context.adminName = admin  // for the access log
        context.logger.notice("console sign-in", metadata: ["admin": "\(admin)", "client": "\(client)"])
        return Response(
            status: .seeOther,
            headers: [
                .location: "/console", .setCookie: ConsoleSessions.setCookie(cookieValue, secure: ConsoleSessions.isSecure(request)),
            ]
        )
    }

    /// Counts a failed sign-in against the client's address (the admin API's limiter) and logs it; over the limit,
    /// throws 429 `rate_limited` with `Retry-After`.
    private func throttle(client: String, context: OfferSignerRequestContext, failure: String) async throws(APIError) {
        switch await failures.take(client) {
        case .allowed:
            context.logger.warning("\(failure)", metadata: ["client": "\(client)"])
        case .limited(let retryAfter):
            context.logger.warning("console sign-in throttled", metadata: ["client": "\(client)", "retryAfterSeconds": "\(retryAfter)"])
            throw APIError(
                .rateLimited,
                "Too many failed admin authentications from this address; try again in \(retryAfter) seconds with a valid token.",
                headers: [.retryAfter: "\(retryAfter)"]
            )
        }
    }

    /// The sign-in form.
    static func loginPage(message: String?) -> HTML {
        let notice: HTML = message.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? .empty
        return ConsoleLayout.frame(
            "Sign in",
            body: """
                <main><h1>OfferSigner console</h1>
                \(notice)
                <form class="stack" method="post" action="/console/login">
                <label for="token">Admin token (one of \(ConfigurationVariable.adminTokens.environmentName))</label>
                <input id="token" name="token" type="password" autocomplete="current-password" required maxlength="512">
                <button type="submit">Sign in</button>
                </form>
                <p class="note">The session lasts 8 hours; signing out ends it.</p></main>
                """
        )
    }
}
