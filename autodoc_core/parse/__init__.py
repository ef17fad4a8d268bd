"""parse"""
