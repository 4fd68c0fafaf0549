"""xetile_dsl.dialects"""
