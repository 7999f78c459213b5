"""What a run concludes and shows: findings and verdicts (`findings`), plots (`plots`), power
(`power`), the setup table (`setup_table`), Markdown/LaTeX tables (`tables`), the report
template format (`templates`)."""
