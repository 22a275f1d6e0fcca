"""The chapter's nine figures (the signature figure and eight more): pure render functions ``render(data, style)
-> Figure`` of the data that :mod:`stagewise.linear_riccati.figure_data` takes out of the experiments (no torch, no
computation: the closed-form curves are in the data), so that ``stagewise figure`` draws them again in any style
from the run's sidecars."""
from __future__ import annotations

import matplotlib.pyplot as plt


def _lw(style, factor: float) -> float:
    """A line width as a fraction of the style's own (thin guides stay thin, and grow on slides)."""
    return factor * float(style.rc.get("lines.linewidth", 1.5))


def _ms(style, factor: float) -> float:
    """A marker size as a fraction of the style's own."""
    return factor * float(style.rc.get("lines.markersize", 6.0))


def _xlabel(fig, text: str, style) -> None:
    fig.supxlabel(text, fontsize=style.rc.get("axes.labelsize", "medium"))


def _spectrum_panels(data: dict, style, size, guide: float) -> plt.Figure:
    panels = list(data["panels"].values())
    fig, axes = style.subplots(1, len(panels), size=size, sharey=True, squeeze=False)
    axes = axes[0]
    for ax, panel in zip(axes, panels):
        ax.loglog(panel["t"], panel["sv"])
        for v in panel["theory"]:
            ax.axhline(v, ls="--", lw=_lw(style, guide), color=style.ink)
        ax.set_title(panel["title"], fontsize="medium")
    axes[0].set_ylabel(data["ylabel"])
    _xlabel(fig, "t", style)
    return fig


def fig1a(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-fig1a`` (the paper's Fig. 1a): top-4 sigma(W1) for orthogonal I_gamma (gamma = 1,
    1e-4) and the first two Gaussian runs, with Corollary 3.1 (at gamma_eff for the Gaussian runs) dashed; log time,
    so that the stages (largest value first) show."""
    return _spectrum_panels(data, style, (13, 3.0), 0.55)


def fig4(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-fig4`` (the paper's Fig. 4): all sigma(W1) when W2 also starts Gaussian, Corollary 3.1
    at gamma_eff dashed."""
    return _spectrum_panels(data, style, (13, 3.0), 0.4)


def spectrum(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-spectrum``: Corollary 3.1 against the GD limit over gamma (first data set), the stable
    rank of both, and the relative objective gap at two step sizes."""
    k, d = data["k"], data["d"]
    blue, orange = style.palette[0], style.palette[1]
    fig, axes = style.subplots(1, 3, size=(12, 3.6))
    ax = axes[0]
    ax.loglog(data["grid"], data["theory"][:, :k], color=blue, lw=_lw(style, 0.67))
    if k < d:
        ax.loglog(data["grid"], data["theory"][:, k], color=orange, lw=_lw(style, 0.67),
                  label=r"$\sqrt{2\gamma}$ ($d-k$ fold)")
        ax.loglog(data["gammas"], data["final"][:, k:], "x", color=orange, ms=_ms(style, 0.67))
        ax.legend(fontsize="small")
    ax.loglog(data["gammas"], data["final"][:, :k], "o", color=blue, ms=_ms(style, 0.67))
    ax.set_ylabel(r"$\sigma_i(W_1^\infty)$")
    ax.set_title("Corollary 3.1 (lines)\nGD (markers)", fontsize="medium")
    ax = axes[1]
    ax.loglog(data["grid"], data["grid_rank"], color=style.ink, lw=_lw(style, 0.67), label="formula")
    ax.loglog(data["gammas"], data["final_rank"], "o", color=blue, ms=_ms(style, 0.67), label="GD")
    ax.axhline(k, ls=":", color=style.muted)
    ax.axhline(d, ls=":", color=style.muted)
    ax.set_ylabel(r"stable rank of $W_1^\infty$")
    ax.legend(fontsize="small", loc="lower right")
    ax = axes[2]
    ax.loglog(data["gammas"], data["gap_eta"], "o-", ms=_ms(style, 0.67), label=rf"$\eta={data['eta']:g}$")
    ax.loglog(data["gammas"], data["gap_eta2"], "s-", ms=_ms(style, 0.67), label=rf"$\eta={data['eta'] / 2:g}$")
    ax.set_ylabel(r"(objective $- V^*$)$/V^*$")
    ax.legend(fontsize="small")
    _xlabel(fig, r"$\gamma$", style)
    return fig


def signature(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-signature``: left, the singular values of beta learned one at a time, largest first, on
    whitened data at the smallest gamma (closed form lines, GD dots, exact half-times dotted), with the largest
    gamma for contrast; right, the hidden layer at the end of training against gamma, Corollary 3.1 (lines) and GD
    (markers): k large values and d - k at sqrt(2 gamma) at small gamma, nearly isotropic at large gamma."""
    k, d = data["k"], data["d"]
    blue, orange, red = style.palette[0], style.palette[1], style.palette[3]
    fig, axes = style.subplots(1, 2, size=(11, 3.2))
    ax = axes[0]
    small, large = data["small"], data["large"]
    ax.plot(data["t"], large["cf"], color=style.muted, lw=_lw(style, 0.6), ls="--")
    ax.plot(data["t"], small["cf"], color=style.ink, lw=_lw(style, 0.8))
    ax.plot(small["t_dots"], small["dots"], "o", ms=_ms(style, 0.45), color=red)
    for t_half in small["t_half"]:
        ax.axvline(t_half, ls=":", lw=_lw(style, 0.5), color=style.muted)
    ax.set_xlabel("t")
    ax.set_ylabel(r"singular values $\sigma_{\beta,i}(t)$")
    ax.set_title(f"learning: {small['label']} (lines, GD dots),\n{large['label']} dashed", fontsize="medium")
    ax = axes[1]
    ax.loglog(data["grid"], data["theory"][:, :k], color=blue, lw=_lw(style, 0.67))
    if k < d:
        ax.loglog(data["grid"], data["theory"][:, k], color=orange, lw=_lw(style, 0.67),
                  label=r"$\sqrt{2\gamma}$ ($d-k$ fold)")
    if data["gd"] is not None:
        ax.loglog(data["gd"]["gammas"], data["gd"]["final"][:, :k], "o", color=blue, ms=_ms(style, 0.6))
        if k < d:
            ax.loglog(data["gd"]["gammas"], data["gd"]["final"][:, k:], "x", color=orange, ms=_ms(style, 0.6))
    if k < d:
        ax.legend(fontsize="small", loc="upper left")
    ax.set_xlabel(r"initialization scale $\gamma$")
    ax.set_ylabel(r"$\sigma_i(W_1)$ at the end")
    ax.set_title("where training ends: Corollary 3.1 (lines),\nGD (markers)", fontsize="medium")
    return fig


def mirror(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-mirror``: sigma(beta) from the beta-ODE against GD at the smallest step, and the GD ->
    ODE gap against eta."""
    fig, axes = style.subplots(1, 2, size=(10, 3.4))
    axes[0].plot(data["times"], data["sv_ode"], color=style.ink, lw=_lw(style, 0.67))
    axes[0].set_xlabel("t")
    axes[0].set_ylabel(r"$\sigma_i(\beta)$")
    gd = data["gd"]
    if gd is None:
        axes[0].set_title(r"$\beta$-ODE (GD not run)", fontsize="medium")
        axes[1].text(0.5, 0.5, "GD not run: step size unstable", ha="center", va="center", transform=axes[1].transAxes)
        return fig
    axes[0].plot(gd["t"], gd["sv"], "o", ms=_ms(style, 0.33), color=style.palette[3])
    axes[0].set_title(r"$\beta$-ODE (lines), GD $\eta=%g$ (dots)" % gd["eta_finest"], fontsize="medium")
    axes[1].loglog(gd["etas"], gd["errs"], "o-")
    axes[1].set_xticks(gd["etas"], [f"{eta:g}" for eta in gd["etas"]])
    axes[1].xaxis.set_minor_formatter(plt.NullFormatter())
    axes[1].set_xlabel(r"$\eta$")
    axes[1].set_ylabel(r"$\max_t\|\beta_{GD}-\beta_{ODE}\|_\infty$")
    return fig


def whitened(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-whitened``. Top: closed form (lines) vs GD at the largest step (dots) per gamma, exact
    half-times dotted. Bottom: the gap against eta per gamma, and sigma(W1) for the smallest gamma against Lemma
    C.10 of the closed form."""
    labels = data["gamma_labels"]
    ng = len(labels)
    # Two rows as two subfigures, each laid out by constrained layout on its own: the bottom row's legend and labels
    # do not open gaps between the top row's panels (one grid for both did; two grids under a tight layout warned
    # into the notebook, with a path of the machine, that they could not be laid out)
    fig, first = style.subplots(size=(max(9.0, 2.8 * ng), 6.4))
    first.remove()
    with style.context():                      # the axes read the style's rcParams when they are made
        upper, lower = fig.subfigures(2, 1)
        top = list(upper.subplots(1, ng, squeeze=False)[0])
        bottom = list(lower.subplots(1, 2))
    for j, ax in enumerate(top):
        ax.plot(data["t"], data["cf"][:, j, :], color=style.ink, lw=_lw(style, 0.67))
        ax.plot(data["t_dots"], data["modes_dots"][:, j, :], "o", ms=_ms(style, 0.42), color=style.palette[3])
        for t_half in data["t_exact"][j]:
            ax.axvline(t_half, ls=":", lw=_lw(style, 0.47), color=style.muted)
        ax.set_title(labels[j], fontsize="medium")
        ax.set_xlabel("t")
    top[0].set_ylabel(r"$\sigma_{\beta,i}(t)$")
    for j in range(ng):
        bottom[0].loglog(data["etas"], data["err"][:, j], "o-", label=labels[j])
    bottom[0].set_xticks(data["etas"], [f"{eta:g}" for eta in data["etas"]])
    bottom[0].xaxis.set_minor_formatter(plt.NullFormatter())
    bottom[0].set_xlabel(r"$\eta$")
    bottom[0].set_ylabel(r"$\max_{t,i}|\sigma_{GD}-\sigma_{\rm closed}|$")
    bottom[0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)
    hidden = data["hidden"]
    bottom[1].semilogy(hidden["t_rec"], hidden["sv_W1"], color=style.palette[0], lw=_lw(style, 0.67))
    bottom[1].semilogy(hidden["t"], hidden["closed"], "--", color=style.ink, lw=_lw(style, 0.55))
    bottom[1].set_xlabel("t")
    bottom[1].set_ylabel(r"$\sigma_i(W_1)$")
    bottom[1].set_title(f"hidden layer, {hidden['label']}", fontsize="medium")
    return fig


def jump(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-jump``. Left: closed form in rescaled time for gamma = 10^-p (lighter: larger p), the
    jump process (dashed), GD (gamma < 0.1) dots. Right: rescaled half-times against 1/ln(1/gamma) with the
    first-order prediction (dashed)."""
    fig, axes = style.subplots(1, 2, size=(11, 3.0))
    shades = style.sequence(len(data["powers"]))
    for closed, color in zip(data["closed"], shades):
        axes[0].plot(data["tau"], closed, lw=_lw(style, 0.67), color=color)
    axes[0].plot(data["tau"], data["jump"], "--", color=style.ink, lw=_lw(style, 0.55))
    for run in data["gd"].values():
        axes[0].plot(run["tau"], run["modes"], "o", ms=_ms(style, 0.33), color=style.palette[3])
    axes[0].set_xlabel(r"rescaled time $\tau=t/\ln(1/\gamma)$")
    axes[0].set_ylabel(r"$\sigma_{\beta,i}$")
    for i, s in enumerate(data["sigma_star"]):
        axes[1].plot(data["inv_log"], data["rescaled"][:, i], "o", ms=_ms(style, 0.67), label=rf"$\sigma_*={s:.3g}$")
        axes[1].plot(data["xs"], data["first_order"][i], "--", color=style.ink, lw=_lw(style, 0.47))
    axes[1].set_xlabel(r"$1/\ln(1/\gamma)$")
    axes[1].set_ylabel(r"$t_{1/2,i}/\ln(1/\gamma)$")
    axes[1].legend(fontsize="small")
    return fig


def noise(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-noise``: Fig. 1b (GD and label-noise GD at the largest delta, heuristic decay dashed)
    and Fig. 3 (paths and medians of the pure-noise SDE); one legend below the panels."""
    fig, axes = style.subplots(1, 3, size=(13, 3.3))
    axes[0].plot(data["steps"], data["sv_gd"])
    axes[0].set_title(rf"GD, $\gamma={data['gamma']:g}$", fontsize="medium")
    axes[1].semilogy(data["steps"], data["sv_noisy"])
    axes[1].semilogy(data["steps"], data["heuristic"], "--", color=style.ink, lw=_lw(style, 0.55),
                     label=r"heuristic $e^{-\eta^2\delta^2 m/2}$")
    axes[1].set_title(rf"label-noise GD, $\delta={data['delta']:g}$", fontsize="medium")
    for ax in axes[:2]:
        ax.set_xlabel("step")
        ax.set_ylabel(r"$\sigma_i(W_1)$")
    sde = data["sde"]
    blue, orange = style.palette[0], style.palette[1]
    axes[2].semilogy(sde["t"], sde["ratio"], lw=_lw(style, 0.55), color=blue)
    axes[2].semilogy(sde["t"], sde["comm"], lw=_lw(style, 0.55), color=orange)
    axes[2].semilogy(sde["t"], sde["med_ratio"], color=blue, lw=_lw(style, 1.33), label=r"median $\sigma_2/\sigma_1$")
    axes[2].semilogy(sde["t"], sde["med_comm"], color=orange, lw=_lw(style, 1.33),
                     label=r"median $\|[w_1,a]\|/(\|w_1\|\|a\|)$")
    axes[2].set_xlabel("t")
    axes[2].set_title("pure-noise SDE\n(4.1), d = 2", fontsize="medium")
    handles = [h for ax in axes[1:] for h in ax.get_legend_handles_labels()[0]]
    fig.legend(handles, [h.get_label() for h in handles], loc="outside lower center", ncols=3, fontsize="small")
    return fig


def relu(data: dict, style) -> plt.Figure:
    """``fig-linear-riccati-relu`` (the paper's Figs. 2 and 5): student hidden-weight singular values (first seed)
    at small and large initialization; training losses at small initialization, every seed."""
    fig, axes = style.subplots(1, 3, size=(13, 3.0))
    for ax, key, title in ((axes[0], "sv_small", r"small init ($10^{-4}$)"), (axes[1], "sv_large", "large init (1)")):
        ax.semilogy(data["t"], data[key])
        ax.set_title(title, fontsize="medium")
        ax.set_ylabel(r"$\sigma_i$(hidden weights)")
    axes[2].loglog(data["loss_t"], data["loss"])
    axes[2].set_ylabel("training loss (small init)")
    _xlabel(fig, "t", style)
    return fig
