"""What a run concludes and shows: findings and verdicts (`findings`), plots (`plots`), power
(`power`), the setup table (`setup_table`), Markdown/LaTeX tables (`tables`), how each table's
intervals are computed (`intervals`), and the Jinja2 templates of spacelm/templates rendered from
facts (`render`)."""
