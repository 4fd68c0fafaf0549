"""xetile_dsl.frontend"""
