import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel

extension ConsolePages {
    /// `/console/policy`: the policy in force (version, when loaded, what it holds, its text) and the form that
    /// dry-runs a candidate against the decision log, as `POST /admin/policy/dry-run` does.
    func policy(_ session: ConsoleSession, candidate: String = "", days: Int = 30, result: HTML = .empty) -> HTML {
        var inForce: HTML =
            "<p class=\"muted\">No policy is in force: every well-formed request is signed (\(ConfigurationVariable.policy.environmentName)).</p>"
        let current = useCases.policy.inForce
        let inForceRevision = current.revision > 0 ? "the store, revision \(current.revision) (every replica)" : "the file (this process)"
        if let policy = current.policy {
            var rows: [[HTML]] = []
            for app in policy.apps {
                for product in app.products {
                    for offer in product.offers {
                        rows.append([
                            "\(app.bundleIdentifier)", "\(product.productIdentifier)", "offer <code>\(offer.offerIdentifier)</code>",
                            "\(Self.ruleNames(offer.rule))",
                        ])
                    }
                    if let introductory = product.introductoryOffer {
                        rows.append([
                            "\(app.bundleIdentifier)", "\(product.productIdentifier)", "introductory offer", "\(Self.ruleNames(introductory))",
                        ])
                    }
                    for entry in product.retention {
                        let answer: String =
                            switch entry.answer {
                            case .message: entry.isFallback ? "retention: fallback message" : "retention: message"
                            case .alternateProduct(let productIdentifier): "retention: switch to \(productIdentifier)"
                            case .promotionalOffer(let offerIdentifier, _): "retention: offer \(offerIdentifier)"
                            }
                        rows.append([
                            "\(app.bundleIdentifier)", "\(product.productIdentifier)",
                            "\(answer) <code>\(entry.messageIdentifier.prefix(8))…</code>" as HTML, "\(Self.ruleNames(entry.rule))",
                        ])
                    }
                }
            }
            let experiments: [[HTML]] = policy.experiments.map { experiment in
                let variants = experiment.variants.map { "\($0.name)\($0.isHoldout ? " (holdout)" : "") ×\($0.weight)" }.joined(separator: ", ")
                return [
                    "<a href=\"/console/experiments/\(experiment.identifier)\">\(experiment.identifier)</a>", "\(experiment.productIdentifier)",
                    "\(experiment.channel.rawValue)", "\(experiment.metric.rawValue)", "\(variants)",
                ]
            }
            let experimentsTable: HTML =
                experiments.isEmpty
                ? HTML.empty
                : "<h3>Experiments</h3>\(ConsoleLayout.table(["Experiment", "Product", "Channel", "Metric", "Variants"], experiments))"
            inForce = """
                <div class="cards"><div class="card"><span>Version (SHA-256 of the text)</span><b><code \
                title="\(policy.version)">\(policy.version.prefix(12))</code></b></div>
                <div class="card"><span>Loaded</span><b>\(ConsoleLayout.date(policyLoadedAt))</b></div>
                <div class="card"><span>Source</span><b id="policy-source">\(inForceRevision)</b></div>
                <div class="card"><span>Holds</span>\(Self.policySummary(policy))</div></div>
                \(ConsoleLayout.table(["App", "Product", "Answer", "Rules (all must hold)"], rows))
                \(experimentsTable)
                <details><summary>The policy's text</summary><pre>\(policy.text)</pre></details>
                """
        }
        let start: HTML =
            current.policy == nil
            ? .empty
            : """
            <p><a id="start-from-policy" href="\(ConsoleForm.policyPath)?start=in-force#candidate">Start from the policy in force</a> \
            (the candidate is its text, to change)</p>
            """
        let diff: HTML = current.policy.map { Self.candidateDiff(candidate, against: $0.text) } ?? .empty
        let form: HTML =
            !useCases.policy.canDryRun
            ? "<p class=\"muted\">A dry-run replays the decision log, which needs the customer store.</p>"
            : """
            \(start)
            <form class="stack wide" method="post" action="\(ConsoleForm.policyPath)" \
            enctype="multipart/form-data">\(ConsoleLayout.csrfField(session))
            <label for="candidate">Candidate policy (YAML or JSON, as <code>offer-signer policy check</code> reads it): paste it…</label>
            <textarea id="candidate" name="candidate" rows="16" spellcheck="false">\(candidate)</textarea>
            <label for="file">…or upload the file (it wins over the text)</label>
            <input id="file" name="file" type="file" accept=".yaml,.yml,.json,application/json,application/yaml,text/yaml,text/plain">
            <label for="days">Replay the decisions of the last … days</label>
            <input id="days" name="days" type="number" min="1" max="\(PolicyDryRun.maximumDays)" value="\(days)" required>
            <button type="submit">Dry-run</button>
            <button type="submit" name="action" value="apply">Apply to every replica</button>
            </form>
            """
        return ConsoleLayout.page(
            "Policy",
            session: session,
            current: ConsoleForm.policyPath,
            body: """
                <h2>In force</h2>
                \(inForce)
                <h2>Dry-run or apply a candidate</h2>
                <p class="note">Dry-run replays the decisions logged in the window under the candidate and shows what would change, by offer, with \
                examples (docs/policy.md, “Dry-run”); nothing is changed. Apply puts the candidate in force on every replica sharing the store (as \
                <code>offer-signer policy apply</code> does). Both are audited under your name. The log keeps customers only as a keyed hash, so a \
                candidate with customer lists cannot be replayed; an experiment can, when the candidate keeps it as in force (same id, variants and \
                weights): each decision is replayed with the variant it was logged with.</p>
                \(result)
                \(diff)
                \(form)
                """
        )
    }

    /// `POST /console/policy`: the dry-run of the candidate in the form, shown with the form; an invalid candidate
    /// or one the log cannot replay is a plain message (400, 422), never a failure of the page.
    func dryRun(_ form: ConsoleForm, session: ConsoleSession, logger: Logger) async throws -> Response {
        let candidateText = form["file"].flatMap { $0.isEmpty ? nil : $0 } ?? form["candidate"] ?? ""
        let daysText = (form["days"] ?? "30").trimmingCharacters(in: .whitespaces)
        func page(_ message: String, status: HTTPResponse.Status) -> Response {
            let days = Int(daysText).map { min(max($0, 1), PolicyDryRun.maximumDays) } ?? 30
            return policy(session, candidate: candidateText, days: days, result: "<p class=\"error\" role=\"alert\">\(message)</p>").response(
                status: status
            )
        }
        guard useCases.policy.canDryRun else { return page("A dry-run needs the customer store.", status: .serviceUnavailable) }
        guard daysText.count <= 5, let days = Int(daysText), (1...PolicyDryRun.maximumDays).contains(days) else {
            return page("days is a whole number from 1 to \(PolicyDryRun.maximumDays).", status: .badRequest)
        }
        guard !candidateText.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            return page("Paste a candidate policy or choose its file first.", status: .badRequest)
        }
        let candidate: OfferPolicy
        do {
            candidate = try OfferPolicy(text: candidateText)
        } catch {
            return page("The candidate is not a valid policy: \(error.message)", status: .badRequest)
        }
        if form["action"] == "apply" {
            do {
                let applied = try await useCases.policy.apply(candidate, by: session.admin, via: "console", logger: logger)
                let note: HTML =
                    """
                    <p class=\"ok\" role=\"status\" id=\"policy-applied\">Applied: version <code>\(candidate.version.prefix(12))</code> is \
                    revision \(applied.revision) in the store; every replica runs it.</p>
                    """
                return policy(session, candidate: "", days: days, result: note).response()
            } catch {
                let apiError = APIError(error)
                return page(apiError.message, status: apiError.status)
            }
        }
        let report: DryRunReport
        do {
            report = try await useCases.policy.dryRun(candidate, days: days, by: session.admin, via: "console", logger: logger)
        } catch let error as OfferServiceError {
            let apiError = APIError(error)
            return page(apiError.message, status: apiError.status)
        }
        return policy(session, candidate: candidateText, days: days, result: Self.dryRunResult(report, candidate: candidate, days: days)).response()
    }

    /// A dry-run's answer: the counts, the changes by offer, the examples.
    static func dryRunResult(_ report: DryRunReport, candidate: OfferPolicy, days: Int) -> HTML {
        let perDay = report.signaturesPerDay
        let byOffer: [[HTML]] = report.byOffer.map { change in
            ["\(change.productIdentifier)", "<code>\(change.offerIdentifier)</code>", "\(change.grantedToRefused)", "\(change.refusedToGranted)"]
        }
        func answer(_ side: DryRunReport.Answer) -> HTML {
            let what = side.offerIdentifier.isEmpty ? "" : " \(side.offerIdentifier)"
            let reasons = side.reasons.isEmpty ? "" : " (\(side.reasons.joined(separator: ", ")))"
            return side.granted
                ? "<span class=\"ok\">granted\(what)</span>" : "<span class=\"bad\">refused\(what)</span><span class=\"muted\">\(reasons)</span>"
        }
        let examples: [[HTML]] = report.examples.map { example in
            [
                "\(ConsoleLayout.date(example.decidedAt))", "\(example.channel)", "<code>\(example.customerHash)</code>",
                "\(example.productIdentifier)",
                "\(example.offerIdentifier.isEmpty ? "–" : example.offerIdentifier)", answer(example.before), answer(example.after),
            ]
        }
        let byOfferTable: HTML =
            byOffer.isEmpty
            ? "<p class=\"muted\">No offer changes.</p>"
            : ConsoleLayout.table(["Product", "Offer", "Granted → refused", "Refused → granted"], byOffer, numericFrom: 2)
        let examplesTable: HTML =
            examples.isEmpty
            ? "<p class=\"muted\">No decision would change.</p>"
            : ConsoleLayout.table(["Decided", "Channel", "Customer (keyed hash)", "Product", "Offer", "Before", "After"], examples)
        return """
            <section id="dry-run-result" data-replayed="\(report.replayed)" data-granted-to-refused="\(report.grantedToRefused)" \
            data-refused-to-granted="\(report.refusedToGranted)" data-changed-offer="\(report.changedOffer)">
            <h3>Dry-run of <code title="\(candidate.version)">\(candidate.version.prefix(12))</code> over the last \(days) days</h3>
            <div class="cards">
            <div class="card"><span>Decisions replayed</span><b>\(report.replayed)</b></div>
            <div class="card"><span>Unchanged</span><b>\(report.unchanged)</b></div>
            <div class="card"><span>Granted → refused</span><b \
            class="\(report.grantedToRefused > 0 ? "bad" : "")">\(report.grantedToRefused)</b></div>
            <div class="card"><span>Refused → granted</span><b>\(report.refusedToGranted)</b></div>
            <div class="card"><span>Another offer or answer</span><b>\(report.changedOffer)</b></div>
            <div class="card"><span>Signatures a day</span><b>\(String(format: "%.2f → %.2f", perDay.before, perDay.after))</b></div>
            </div>
            \(Self.notReplayedNote(report.notReplayed))
            <h3>By offer</h3>
            \(byOfferTable)
            <h3>Examples (at most \(DryRunReport.maximumExamples))</h3>
            \(examplesTable)
            </section>
            """
    }

    /// The most lines the candidate and the policy in force may have together for the page to compare them.
    static let diffLineLimit = 4_000

    /// Says which of the window's decisions were not decided again, and why; nothing when all were.
    static func notReplayedNote(_ notReplayed: DryRunReport.NotReplayed) -> HTML {
        var parts: [String] = []
        if notReplayed.withoutExperimentVariant > 0 {
            parts.append(
                "\(notReplayed.withoutExperimentVariant) made while the candidate's experiment ran but logged without its variant "
                    + "(before the log kept variants, or under another experiment)"
            )
        }
        if notReplayed.unreadable > 0 { parts.append("\(notReplayed.unreadable) whose facts could not be read back") }
        guard !parts.isEmpty else { return "" }
        return "<p class=\"note\" id=\"not-replayed\">Not replayed, and in none of the counts: \(parts.joined(separator: "; ")).</p>"
    }

    /// The candidate's changes against the policy in force, line by line (`-` a line of the policy in force the
    /// candidate drops, `+` one it adds), with two lines around each change; nothing for an empty candidate.
    static func candidateDiff(_ candidate: String, against inForce: String) -> HTML {
        guard !candidate.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return .empty }
        let old = lines(inForce)
        let new = lines(candidate)
        guard old.count + new.count <= diffLineLimit else {
            return """
                <p class="muted" id="candidate-diff">The candidate and the policy in force are too long to compare here \
                (over \(diffLineLimit) lines): compare the files with <code>diff</code>.</p>
                """
        }
        let marked = lineDiff(from: old, to: new)
        let added = marked.filter { $0.mark == "+" }.count
        let removed = marked.filter { $0.mark == "-" }.count
        guard added + removed > 0 else {
            return """
                <p class="muted" id="candidate-diff" data-added="0" data-removed="0">The candidate is the policy in force, line for line.</p>
                """
        }
        let near = Set(marked.indices.filter { marked[$0].mark != " " }.flatMap { ($0 - 2)...($0 + 2) })
        var shown: [HTML] = []
        for (index, line) in marked.enumerated() {
            if near.contains(index) {
                let kind = line.mark == "+" ? "add" : line.mark == "-" ? "del" : "same"
                shown.append("<span class=\"\(kind)\">\(String(line.mark)) \(line.text)</span>\n")
            } else if near.contains(index - 1) || index == 0 {
                shown.append("<span class=\"gap\">…</span>\n")
            }
        }
        return """
            <section id="candidate-diff" data-added="\(added)" data-removed="\(removed)"><h3>The candidate against the policy in force</h3>
            <p class="muted">\(added) lines added, \(removed) removed (<code>-</code> the policy in force, <code>+</code> the candidate).</p>
            <pre class="diff">\(shown)</pre></section>
            """
    }

    /// A text's lines, without their line ends (`\n`, or `\r\n` as a browser sends a text area: one Character).
    static func lines(_ text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
    }

    /// The lines of `new` and those `old` had that `new` drops, in order, each marked ` ` (in both), `-` or `+`.
    static func lineDiff(from old: [Substring], to new: [Substring]) -> [(mark: Character, text: Substring)] {
        var removed: Set<Int> = []
        var inserted: Set<Int> = []
        for change in new.difference(from: old) {
            switch change {
            case .remove(let offset, _, _): removed.insert(offset)
            case .insert(let offset, _, _): inserted.insert(offset)
            }
        }
        var marked: [(mark: Character, text: Substring)] = []
        var (i, j) = (0, 0)
        while i < old.count || j < new.count {
            if i < old.count, removed.contains(i) {
                marked.append(("-", old[i]))
                i += 1
            } else if j < new.count, inserted.contains(j) {
                marked.append(("+", new[j]))
                j += 1
            } else if i < old.count, j < new.count {
                marked.append((" ", new[j]))
                (i, j) = (i + 1, j + 1)
            } else {
                break
            }
        }
        return marked
    }

    /// The names of a rule's parts, as the policy file writes them.
    static func ruleNames(_ rule: AllRules) -> String {
        let names = rule.rules.map(\.name)
        return names.isEmpty ? "none (everyone)" : names.joined(separator: ", ")
    }
}
