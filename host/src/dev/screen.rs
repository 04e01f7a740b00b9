//! The terminal screen of `weir dev` (ratatui): clusters, plugins, parents and the host's activity feed.
//!
//! The screen uses the terminal's alternate screen and leaves it when dropped. It does not take
//! the keyboard (no raw mode), so Ctrl-C still reaches `weir dev` as SIGINT. Log lines written to
//! stderr meanwhile are wiped by a full repaint every few seconds.

use std::io::Stdout;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};
use ratatui::{Frame, Terminal};

use super::model::Model;

/// Most parents listed before the rest are summarised.
const MAX_PARENTS: usize = 30;
/// How often the whole screen is repainted (stray stderr lines disappear).
const REPAINT: Duration = Duration::from_secs(3);

/// The terminal while the view owns it.
pub(crate) struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    painted: Instant,
}

impl Screen {
    /// Switches to the alternate screen and hides the cursor.
    pub(crate) fn enter() -> std::io::Result<Screen> {
        let mut out = std::io::stdout();
        execute!(out, terminal::EnterAlternateScreen, cursor::Hide)?;
        let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
        terminal.clear()?;
        Ok(Screen {
            terminal,
            painted: Instant::now(),
        })
    }

    /// Draws `model` (only the cells that changed, and everything every few seconds).
    pub(crate) fn draw(&mut self, model: &Model, kubectl: &str) -> std::io::Result<()> {
        if self.painted.elapsed() >= REPAINT {
            self.terminal.clear()?;
            self.painted = Instant::now();
        }
        self.terminal.draw(|f| render(f, model, kubectl))?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        // Nothing to do about a terminal that went away.
        let _ = execute!(
            self.terminal.backend_mut(),
            cursor::Show,
            terminal::LeaveAlternateScreen
        );
    }
}

/// Draws the whole view into `frame`.
pub(crate) fn render(frame: &mut Frame, model: &Model, kubectl: &str) {
    let parents_shown = model.parents.len().min(MAX_PARENTS);
    let clusters_height = if model.clusters.is_empty() {
        0
    } else {
        model.clusters.len() as u16 + 2
    };
    let [title, clusters, plugins, parents, feed] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(clusters_height),
        Constraint::Length(model.plugins.len().max(1) as u16 + 3),
        Constraint::Length(parents_shown.max(1) as u16 + 3),
        Constraint::Min(4),
    ])
    .areas(frame.area());
    let bold = Style::new().add_modifier(Modifier::BOLD);
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("weir dev", bold),
            Span::raw(format!(" — {kubectl} get <kind> — Ctrl-C stops")),
        ])),
        title,
    );

    if !model.clusters.is_empty() {
        let lines: Vec<Line> = model
            .clusters
            .values()
            .map(|l| Line::raw(l.clone()))
            .collect();
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" clusters ")),
            clusters,
        );
    }

    let mut plugin_block = Block::bordered().title(" plugins ");
    if let Some(file) = &model.loading {
        plugin_block = plugin_block.title_bottom(format!(" compiling {file} ... "));
    }
    let rows: Vec<Row> = if model.plugins.is_empty() {
        vec![Row::new(vec![Cell::from(
            "no plugin loaded yet (build one into the plugins directory)",
        )])]
    } else {
        model
            .plugins
            .values()
            .map(|p| {
                let alarm = |n: u64| {
                    Cell::from(n.to_string()).style(if n > 0 {
                        Style::new().fg(Color::Red)
                    } else {
                        Style::new()
                    })
                };
                Row::new(vec![
                    Cell::from(p.name.clone()),
                    Cell::from(p.version.clone()),
                    Cell::from(p.kind.clone()),
                    Cell::from(p.sha.clone()),
                    Cell::from(format!("{:.1}", p.rate)),
                    alarm(p.errors),
                    alarm(p.refused),
                    alarm(p.hot_loops),
                ])
            })
            .collect()
    };
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Fill(2),
                Constraint::Length(10),
                Constraint::Fill(3),
                Constraint::Length(12),
                Constraint::Length(12),
                Constraint::Length(7),
                Constraint::Length(8),
                Constraint::Length(10),
            ],
        )
        .header(
            Row::new([
                "plugin",
                "version",
                "kind",
                "sha256",
                "reconciles/s",
                "errors",
                "refused",
                "hot loops",
            ])
            .style(bold),
        )
        .block(plugin_block),
        plugins,
    );

    let rows: Vec<Row> = model
        .parents
        .iter()
        .take(MAX_PARENTS)
        .map(|(key, p)| {
            let ready = if p.reconciled.is_empty() {
                p.ready.clone()
            } else {
                format!("{}, {}", p.ready, p.reconciled)
            };
            let style = if p.ready.starts_with("Ready=True") {
                Style::new().fg(Color::Green)
            } else {
                Style::new().fg(Color::Yellow)
            };
            let children = p.children.iter().cloned().collect::<Vec<_>>().join(", ");
            let last = model
                .last
                .get(key)
                .map_or_else(String::new, |(at, outcome)| format!("{at} {outcome}"));
            Row::new(vec![
                Cell::from(key.clone()),
                Cell::from(ready).style(style),
                Cell::from(format!("{} [{children}]", p.children.len())),
                Cell::from(last),
            ])
        })
        .collect();
    let more = model.parents.len().saturating_sub(MAX_PARENTS);
    let mut parent_block = Block::bordered().title(" parents ");
    if more > 0 {
        parent_block = parent_block.title_bottom(format!(" ... and {more} more "));
    }
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Fill(2),
                Constraint::Fill(2),
                Constraint::Fill(4),
                Constraint::Length(24),
            ],
        )
        .header(Row::new(["parent", "ready", "children", "last reconcile"]).style(bold))
        .block(parent_block),
        parents,
    );

    let height = feed.height.saturating_sub(2) as usize;
    let lines: Vec<Line> = model
        .feed
        .iter()
        .skip(model.feed.len().saturating_sub(height))
        .map(|l| Line::from(l.as_str()))
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" what the host did ")),
        feed,
    );
}
