/// Variables with the service's prefix that it does not read: most often a typo (`OFFER_SIGNER_BUNDLEID`), which
/// would otherwise be ignored without a word. Start-up goes on; the warning names the nearest variable.
extension ConfigurationVariable {
    /// Whether the service reads `name`: one of ``allCases``, or a key by identifier (`OFFER_SIGNER_KEY_<KEYID>`,
    /// `…_FILE`), found by prefix.
    public static func isKnown(_ name: String) -> Bool {
        name.hasPrefix(keyPrefix) || allCases.contains { $0.environmentName == name }
    }

    /// The variable whose name is nearest to `name` (fewest single-character insertions, deletions and
    /// substitutions), if it is near enough to be the one meant: at most half the length of the longer name
    /// after the common prefix.
    public static func nearest(to name: String) -> ConfigurationVariable? {
        let scored = allCases.map { ($0, editDistance(Array(name), Array($0.environmentName))) }
        guard let (variable, distance) = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let longer = max(name.count, variable.environmentName.count) - environmentPrefix.count
        return distance <= max(1, longer / 2) ? variable : nil
    }

    /// A warning for each variable of `environment` that has the service's prefix but is not read, naming the
    /// nearest known variable; never a value.
    public static func unknownVariableWarnings(in environment: [String: String]) -> [String] {
        environment.keys.sorted().compactMap { name in
            guard name.hasPrefix(environmentPrefix), !isKnown(name), !toolVariables.contains(name) else { return nil }
            guard let nearest = nearest(to: name) else {
                return "\(name) is not a variable offer-signer reads, so it is ignored; the variables are listed in docs/configuration.md."
            }
            return "\(name) is not a variable offer-signer reads, so it is ignored: did you mean \(variable: nearest)?"
        }
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
