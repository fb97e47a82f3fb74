import AppStoreServerAPI
import Foundation
import OfferApplication
import OfferEligibility
import OfferModel

extension ConsolePages {
    /// `/console/retention`: each app's Retention Messaging catalogue — the policy's messages and images with
    /// Apple's approval state in Production and Sandbox as `retention sync`/`retention status` last recorded it —
    /// and the last performance test (`retention go-live`). Reads the store only; Apple is not asked.
    func retention(_ session: ConsoleSession) async throws -> HTML {
        var parts: [HTML] = []
        let apps = (useCases.policy.inForce.policy?.apps ?? []).filter { !$0.retentionCatalogue.isEmpty }
        if apps.isEmpty {
            parts.append("<p class=\"muted\">The policy in force declares no retention messages (docs/retention.md says how).</p>")
        }
        for app in apps {
            let states = try await useCases.retention.recordedStates(of: app.bundleIdentifier)  // environment → identifier → state
            func state(_ identifier: String, _ environment: String) -> HTML {
                let value = states[environment]?[identifier] ?? "NOT_SENT"
                let style = value == "APPROVED" ? "ok" : value == "REJECTED" ? "bad" : "muted"
                return "<span class=\"\(style)\">\(value)</span>"
            }
            let catalogue = app.retentionCatalogue
            var rows: [[HTML]] = catalogue.messages.map { message in
                [
                    "message", "\(message.name)", "<code>\(message.identifier)</code>", "\(message.header)", state(message.identifier, "Production"),
                    state(message.identifier, "Sandbox"),
                ]
            }
            rows += catalogue.images.map { image in
                [
                    "image", "\(URL(fileURLWithPath: image.file).lastPathComponent)", "<code>\(image.identifier)</code>", "\(image.size)",
                    state(image.identifier, "Production"), state(image.identifier, "Sandbox"),
                ]
            }
            parts.append("<h2>\(app.bundleIdentifier)</h2>")
            parts.append(ConsoleLayout.table(["Kind", "Name", "Identifier", "Header / size", "Production", "Sandbox"], rows, numericFrom: 6))
            let defaults: [[HTML]] = catalogue.defaults.map { ["\($0.productIdentifier)", "\($0.locale)", "\($0.messageName)"] }
            if !defaults.isEmpty { parts.append(ConsoleLayout.table(["Product", "Locale", "Default message"], defaults, numericFrom: 3)) }
            if let test = await useCases.retention.lastPerformanceTest(app.bundleIdentifier) {
                let lines: [HTML] = RetentionGoLive.summary(test.result).map { "<li>\($0)</li>" }
                let verdict: HTML = test.live ? "<b class=\"ok\">live in Production</b>" : "<b class=\"bad\">not live</b>"
                parts.append(
                    "<h3>Last performance test</h3><p>Ended \(ISO8601DateFormatter().string(from: test.endedAt)): \(verdict)</p><ul>\(lines)</ul>"
                )
            } else {
                parts.append("<p class=\"muted\">No performance test recorded yet (offer-signer retention go-live).</p>")
            }
        }
        return ConsoleLayout.page("Retention", session: session, current: "/console/retention", body: "\(parts)")
    }
}
