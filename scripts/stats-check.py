#!/usr/bin/env python3
"""Reference values from SciPy for the OfferExperiments statistics.

Prints the values that Tests/OfferExperimentsTests/ReferenceValueTests.swift holds, so that the Swift
implementation fails its tests if it drifts. Run with any Python that has SciPy:

    python3 -m venv /tmp/stats-venv && /tmp/stats-venv/bin/pip install scipy
    /tmp/stats-venv/bin/python scripts/stats-check.py

The always-valid interval is recomputed here from its formula (docs/experiments.md) with SciPy's optimiser and
normal quantiles, independently of the Swift code.
"""
import math

from scipy import optimize, special, stats

ALPHA = 0.05


def show(label, value):
    print(f"{label:<48} {value!r}")


print("# chi-square survival function: chi2.sf(x, df)")
for x, df in [(16.0, 1), (0.36, 1), (3.5, 2), (25.0, 4), (100.0, 3), (0.5, 10), (200.0, 150), (1e-3, 1), (60.0, 1)]:
    show(f"chi2.sf({x}, {df})", float(stats.chi2.sf(x, df)))

print("# regularized upper incomplete gamma: gammaincc(a, x)")
for a, x in [(0.5, 0.1), (5.0, 3.0), (10.0, 20.0), (2.5, 0.001), (100.0, 90.0), (1.0, 50.0)]:
    show(f"gammaincc({a}, {x})", float(special.gammaincc(a, x)))

print("# ln gamma: gammaln(x)")
for x in [0.5, 3.7, 1000.5, 0.01]:
    show(f"gammaln({x})", float(special.gammaln(x)))

print("# normal: norm.cdf / norm.ppf")
for z in [-3.0, 1.5, -8.0]:
    show(f"norm.cdf({z})", float(stats.norm.cdf(z)))
for p in [0.975, 0.8, 1e-6, 0.5, 0.999999]:
    show(f"norm.ppf({p})", float(stats.norm.ppf(p)))

print("# sample-ratio mismatch, 10,000 customers weighted 50/50: chisquare(observed).pvalue")
for observed in [[5200, 4800], [5030, 4970], [3400, 3300, 3300]]:
    show(f"chisquare({observed})", float(stats.chisquare(observed).pvalue))


def multiplier(x):
    return (1 + x) * math.log((1 + x) / (x * ALPHA**2))


# The minimiser of the multiplier: the root of its derivative, ln((1 + x)/(x alpha^2)) - 1/x.
ratio = optimize.brentq(lambda x: math.log((1 + x) / (x * ALPHA**2)) - 1 / x, 1e-9, 1.0, xtol=1e-15, rtol=1e-15)
k = math.sqrt(multiplier(ratio))
print("# always-valid design at alpha 0.05")
show("optimal ratio x*", float(ratio))
show("planned multiplier K", k)


def plan(p0, lift, power=0.8):
    p1 = p0 + lift
    v1 = p0 * (1 - p0) + p1 * (1 - p1)
    pooled = (p0 + p1) / 2
    pv = pooled * (1 - pooled)
    v_interval = max(p0 * (1 - p0), pv) + max(p1 * (1 - p1), pv)
    zb = stats.norm.ppf(power)
    za = stats.norm.ppf(1 - ALPHA / 2)
    sequential = math.ceil((k + zb) ** 2 * v_interval / lift**2)
    fixed = math.ceil((za * math.sqrt(2 * pooled * (1 - pooled)) + zb * math.sqrt(v1)) ** 2 / lift**2)
    return sequential, fixed


print("# sample sizes per variant (sequential, fixed horizon), alpha 0.05, power 0.8")
for p0, lift in [(0.20, 0.05), (0.10, 0.02), (0.05, 0.01), (0.30, 0.05), (0.50, 0.10), (0.02, 0.01), (0.20, -0.05),
                 (0.05, 0.02), (0.10, 0.05), (0.20, 0.02), (0.20, 0.10)]:
    show(f"plan({p0}, {lift})", plan(p0, lift))


def smoothed_variance(successes, trials):
    p = (successes + 1) / (trials + 2)
    return p * (1 - p)


def radius(variance, planned):
    x = ratio * variance / planned
    return math.sqrt(variance * multiplier(x))


print("# intervals (estimate, lower, upper); planning size 2176 per variant (the plan for 20 % -> 25 %)")
n0 = 2176
for s, n in [(420, 2000), (30, 100), (0, 50), (50, 50)]:
    # The rates p with |s/n - p| <= M sqrt(p (1 - p) / n), M the multiplier after n trials, found by root finding.
    est = s / n
    m = math.sqrt(multiplier(ratio * n0 / n))

    def outside(p):
        return abs(est - p) - m * math.sqrt(p * (1 - p) / n)

    # Brackets just inside (0, 1) and just off the estimate, where `outside` is negative.
    lower = 0.0 if outside(1e-300) <= 0 else optimize.brentq(outside, 1e-300, est - 1e-12, xtol=1e-16, rtol=1e-15)
    upper = 1.0 if outside(1 - 1e-16) <= 0 else optimize.brentq(outside, est + 1e-12, 1 - 1e-16, xtol=1e-16, rtol=1e-15)
    show(f"rate({s}/{n})", (est, lower, upper))
for (sb, nb), (sa, na) in [((540, 2100), (420, 2090)), ((60, 300), (50, 310)), ((1300, 5000), (1000, 5000))]:
    pooled = smoothed_variance(sb + sa, nb + na)
    vb, va = max(smoothed_variance(sb, nb), pooled), max(smoothed_variance(sa, na), pooled)
    r = radius(vb / nb + va / na, (vb + va) / n0)
    est = sb / nb - sa / na
    show(f"difference({sb}/{nb} - {sa}/{na})", (est, max(-1.0, est - r), min(1.0, est + r)))

# Bonferroni (docs/experiments.md "Several comparisons"): m comparisons, each interval at alpha / m. The same formula
# at the corrected alpha; the difference of the first case above, at alpha 0.05 / 3 (three comparisons).
FAMILY, COMPARISONS = 0.05, 3
corrected = FAMILY / COMPARISONS


def multiplier_at(x, alpha):
    return (1 + x) * math.log((1 + x) / (x * alpha**2))


ratio_c = optimize.brentq(lambda x: math.log((1 + x) / (x * corrected**2)) - 1 / x, 1e-9, 1.0, xtol=1e-15, rtol=1e-15)
print(f"# Bonferroni: alpha {FAMILY}/{COMPARISONS} per comparison")
show("optimal ratio x* (alpha/3)", float(ratio_c))
show("planned multiplier K (alpha/3)", math.sqrt(multiplier_at(ratio_c, corrected)))
(sb, nb), (sa, na) = (540, 2100), (420, 2090)
pooled = smoothed_variance(sb + sa, nb + na)
vb, va = max(smoothed_variance(sb, nb), pooled), max(smoothed_variance(sa, na), pooled)
variance = vb / nb + va / na
r = math.sqrt(variance * multiplier_at(ratio_c * variance / ((vb + va) / n0), corrected))
est = sb / nb - sa / na
show(f"difference at alpha/3 ({sb}/{nb} - {sa}/{na})", (est, max(-1.0, est - r), min(1.0, est + r)))
