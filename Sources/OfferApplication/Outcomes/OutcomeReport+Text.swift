import Foundation
import OfferModel
import OfferStore

extension OutcomeReport {
    /// The columns of ``table()`` and ``csv(header:)``.
    public static let columns = [
        "from", "to", "bundleId", "productId", "offerIdentifier", "offerType", "channel", "issued", "customers", "redeemed",
        "attributed", "renewedAfterOffer", "refunded", "revenue",
    ]

    /// The report for people (`offer-signer outcomes report`): one line per offer, then the retention line.
    /// Identifiers from App Store data are shown with control characters replaced.
    public func table() -> String {
        let header = Array(Self.columns.dropFirst(2))
        let rows = offers.map { Array(cells($0).dropFirst(2)) }
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        // Numbers right-aligned: offerType and issued … refunded.
        let numeric: Set<Int> = [3, 5, 6, 7, 8, 9, 10]
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                numeric.contains(index)
                    ? String(repeating: " ", count: widths[index] - cell.count) + cell
                    : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var lines = ["Outcomes from \(Self.iso(from)) to \(Self.iso(to))", line(header)]
        lines += rows.map(line)
        if offers.isEmpty { lines.append("(no offers issued or redeemed in this window)") }
        let rate = String(format: "%.1f", retention.saveRate * 100)
        lines.append("Retention: \(retention.answered) answered, \(retention.offers) with an offer, \(retention.saved) saved (\(rate) %)")
        return lines.joined(separator: "\n")
    }

    /// The report as CSV (RFC 4180), one line per offer; with `header`, the column names first. A cell that a
    /// spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) is prefixed with `'`.
    public func csv(header: Bool = true) -> String {
        var lines = header ? [Self.columns.joined(separator: ",")] : []
        lines += offers.map { cells($0).map(Self.csvCell).joined(separator: ",") }
        return lines.joined(separator: "\r\n")
    }

    private func cells(_ offer: OfferOutcome) -> [String] {
        let revenue = offer.revenue.map { "\($0.currency) \(Self.units($0.milliunits))" }.joined(separator: "; ")
        return [
            Self.iso(from), Self.iso(to), Self.printable(offer.bundleIdentifier), Self.printable(offer.productIdentifier),
            Self.printable(offer.offerIdentifier), "\(offer.offerType)", offer.channel, "\(offer.issued)", "\(offer.customers)",
            "\(offer.redeemed)", "\(offer.attributed)", "\(offer.renewedAfterOffer)", "\(offer.refunded)", revenue,
        ]
    }

    /// Milliunits as units with three decimals (`4990` is `4.990`).
    static func units(_ milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : ""
        let magnitude = milliunits.magnitude
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    private static func iso(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    private static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? "?" : scalar
                }
            )
        )
    }

    private static func csvCell(_ text: String) -> String {
        var cell = text
        if let first = cell.first, "=+-@".contains(first) { cell = "'" + cell }
        guard cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return cell }
        return "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
